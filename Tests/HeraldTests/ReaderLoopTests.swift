import Foundation
import HeraldTestSupport
import HeraldWire
import Synchronization
import Testing

@testable import Herald

/// The process's ``ReaderLoop``s: one thread per core reads many connections, each gets everything in order, a connection whose
/// consumer stalls or that closes leaves the others alone, and the thread runs only while there are connections.
@Suite struct ReaderLoopTests {
    /// What the consumers saw: the payloads of each in arrival order, and the threads they ran on.
    final class Received: Sendable {
        private let state = Mutex<(payloads: [Int: [UInt32]], threads: Set<UInt>)>(([:], []))

        func record(_ consumer: Int, _ payload: [UInt8]) {
            let value = payload.withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) }
            let thread = UInt(pthread_self())
            state.withLock { state in
                state.payloads[consumer, default: []].append(value)
                state.threads.insert(thread)
            }
        }

        func payloads(_ consumer: Int) -> [UInt32] { state.withLock { $0.payloads[consumer] ?? [] } }
        var threads: Set<UInt> { state.withLock { $0.threads } }
    }

    static func payload(_ index: Int) -> [UInt8] {
        withUnsafeBytes(of: UInt32(index)) { Array($0) }
    }

    /// Starts a consumer of `notifications` preferring `herald`'s reader thread, recording plain notifications.
    static func consume(
        _ notifications: HeraldNotifications,
        on herald: Herald,
        as consumer: Int,
        into received: Received
    ) -> Task<Void, Never> {
        Task(executorPreference: herald.taskExecutor) {
            for await notification in notifications where notification.notice == nil {
                received.record(consumer, notification.payload)
            }
        }
    }

    @Test func manyConnectionsOfOneProcessEachReceiveEveryPostInOrderOnOneReaderThread() async throws {
        try await withDaemon { daemon in
            let count = 2000
            let received = Received()
            var subscribers: [Herald] = []
            var consumers: [Task<Void, Never>] = []
            for index in 0..<20 {
                let herald = try await connect(daemon)
                let notifications = try await herald.notifications(matching: "loop.many", bufferingPolicy: .unbounded)
                consumers.append(Self.consume(notifications, on: herald, as: index, into: received))
                subscribers.append(herald)
            }
            for herald in subscribers {
                #expect(herald.connection.executor.loop.isReading(herald.connection))
            }
            let poster = try await connect(daemon)
            for index in 0..<count {
                try await poster.post("loop.many", payload: Self.payload(index))
            }
            let expected = (0..<count).map(UInt32.init)
            let complete = try await eventually(timeout: .seconds(30)) {
                (0..<20).allSatisfy { received.payloads($0).count >= count }
            }
            #expect(complete, "not every connection received all \(count) posts")
            for index in 0..<20 {
                let inOrder = received.payloads(index) == expected
                #expect(inOrder, "connection \(index) lost or reordered posts")
            }
            // The consumers ran on the threads that read the connections: one per loop, not one per connection.
            #expect(received.threads.count <= ReaderLoop.all.count)
            for consumer in consumers { consumer.cancel() }
            for herald in subscribers + [poster] { await herald.close() }
        }
    }

    @Test func aPublisherPostingWithoutPauseHasEveryPostWrittenAndDeliveredInOrder() async throws {
        try await withDaemon { daemon in
            // Enough to fill the outgoing buffer many times over: the loop writes it batch after batch, with nothing
            // else to wake it, while the post that does not fit waits for room.
            let count = 100_000
            let subscriber = try await connect(daemon)
            let notifications = try await subscriber.notifications(
                matching: "loop.burst",
                bufferingPolicy: .unbounded
            )
            let received = Received()
            let consumer = Self.consume(notifications, on: subscriber, as: 0, into: received)
            let publisher = try await connect(daemon)
            let posting = Task {
                for index in 0..<count {
                    try await publisher.post("loop.burst", payload: Self.payload(index))
                }
            }
            let complete = try await eventually(timeout: .seconds(60)) { received.payloads(0).count >= count }
            posting.cancel()
            #expect(complete, "the subscriber got \(received.payloads(0).count) of \(count) posts")
            let inOrder = received.payloads(0) == (0..<count).map(UInt32.init)
            #expect(inOrder, "the posts arrived out of order, or some twice")
            consumer.cancel()
            for herald in [subscriber, publisher] { await herald.close() }
        }
    }

    @Test func aConnectionWhoseConsumerNeverReadsDoesNotStopAnothersDelivery() async throws {
        try await withDaemon { daemon in
            let count = 5000
            let stalled = try await connect(daemon)
            // Never iterated: its buffer fills at 8 and drops the rest, while its socket is still read.
            let ignored = try await stalled.notifications(matching: "loop.stall", bufferingPolicy: .bufferingOldest(8))
            let healthy = try await connect(daemon)
            let notifications = try await healthy.notifications(matching: "loop.stall", bufferingPolicy: .unbounded)
            let received = Received()
            let consumer = Self.consume(notifications, on: healthy, as: 0, into: received)
            let poster = try await connect(daemon)
            for index in 0..<count {
                try await poster.post("loop.stall", payload: Self.payload(index))
            }
            let complete = try await eventually(timeout: .seconds(30)) { received.payloads(0).count >= count }
            #expect(complete, "the healthy connection got \(received.payloads(0).count) of \(count) posts")
            let inOrder = received.payloads(0) == (0..<count).map(UInt32.init)
            #expect(inOrder, "the healthy connection's posts arrived out of order, or some twice")
            // The stalled connection is still open and answered: the loop kept reading it.
            _ = try await stalled.flush()
            #expect(stalled.connection.closedReason == nil)
            _ = ignored
            consumer.cancel()
            for herald in [stalled, healthy, poster] { await herald.close() }
        }
    }

    @Test func closingOneConnectionLeavesTheOthersWorking() async throws {
        try await withDaemon { daemon in
            let received = Received()
            var heralds: [Herald] = []
            var consumers: [Task<Void, Never>] = []
            for index in 0..<3 {
                let herald = try await connect(daemon)
                let notifications = try await herald.notifications(matching: "loop.close", bufferingPolicy: .unbounded)
                consumers.append(Self.consume(notifications, on: herald, as: index, into: received))
                heralds.append(herald)
            }
            await heralds[1].close()
            #expect(!heralds[1].connection.executor.loop.isReading(heralds[1].connection))
            let poster = try await connect(daemon)
            for index in 0..<100 {
                try await poster.post("loop.close", payload: Self.payload(index))
            }
            let delivered = try await eventually(timeout: .seconds(20)) {
                received.payloads(0).count >= 100 && received.payloads(2).count >= 100
            }
            #expect(delivered)
            let inOrder = (0..<100).map(UInt32.init)
            #expect(received.payloads(0) == inOrder)
            #expect(received.payloads(2) == inOrder)
            #expect(received.payloads(1).isEmpty)
            // The others still answer requests.
            _ = try await heralds[0].flush()
            _ = try await heralds[2].flush()
            for consumer in consumers { consumer.cancel() }
            for herald in [heralds[0], heralds[2], poster] { await herald.close() }
        }
    }

    @Test func aLoopRunsItsThreadOnlyWhileItHasConnections() async throws {
        try await withDaemon { daemon in
            // A loop of this test's own: the process's are shared with the tests running beside it.
            let loop = ReaderLoop()
            #expect(!loop.isRunning)
            #expect(loop.threadsStarted == 0)
            let options = Herald.Options(clientName: "loop-tests", reconnects: false)
            var connections: [Connection] = []
            for _ in 0..<3 {
                connections.append(
                    try await Connection.open(
                        socketPath: daemon.socketPath,
                        options: options,
                        executor: ReaderExecutor(loop: loop)
                    )
                )
            }
            #expect(loop.isRunning)
            #expect(loop.threadsStarted == 1, "each connection started a thread of its own")
            for connection in connections {
                #expect(loop.isReading(connection))
            }
            await connections[0].close()
            await connections[1].close()
            #expect(loop.isRunning, "the loop stopped while a connection was still open")
            await connections[2].close()
            #expect(try await eventually { !loop.isRunning }, "the reader thread outlived the last connection")
            // A later connection starts it again.
            let again = try await Connection.open(
                socketPath: daemon.socketPath,
                options: options,
                executor: ReaderExecutor(loop: loop)
            )
            #expect(loop.isRunning)
            #expect(loop.threadsStarted == 2)
            await again.close()
            #expect(try await eventually { !loop.isRunning })
        }
    }
}
