import Foundation
import HeraldTestSupport
import Synchronization
import Testing

@testable import Herald
@testable import HeraldCore

/// Posts go through one bounded outgoing buffer per connection, written in batches: order is kept, a full buffer
/// suspends `post` without losing anything, and the acknowledged form still answers with the sequence number.
@Suite struct PostCoalescingTests {
    /// A counter that tasks share.
    final class Count: Sendable {
        let value = Atomic<Int>(0)
    }

    /// The payload of post `index` of task `task`: both, little-endian, padded to `size` bytes.
    static func payload(task: Int, index: Int, size: Int = 8) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: max(8, size))
        bytes.withUnsafeMutableBytes { raw in
            raw.storeBytes(of: UInt32(task).littleEndian, toByteOffset: 0, as: UInt32.self)
            raw.storeBytes(of: UInt32(index).littleEndian, toByteOffset: 4, as: UInt32.self)
        }
        return bytes
    }

    /// The task and index a payload made by ``payload(task:index:size:)`` carries.
    static func decode(_ notification: HeraldNotification) -> (task: Int, index: Int) {
        notification.withUnsafePayloadBytes { raw in
            (
                Int(UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: 0, as: UInt32.self))),
                Int(UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: 4, as: UInt32.self)))
            )
        }
    }

    @Test func postsFromSeveralTasksArriveInTheOrderEachTaskMadeThemAndBeforeALaterAcknowledgedPost() async throws {
        try await withDaemon { daemon in
            let subscriber = try await connect(daemon, name: "subscriber")
            let publisher = try await connect(daemon, name: "publisher")
            let tasks = 4
            let perTask = 2000
            let stream = try await subscriber.notifications(matching: "order.**", bufferingPolicy: .unbounded)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for task in 0..<tasks {
                    group.addTask {
                        for index in 0..<perTask {
                            try await publisher.post("order.t\(task)", payload: Self.payload(task: task, index: index))
                        }
                    }
                }
                try await group.waitForAll()
            }
            // Queued behind every post above on the same connection, so the daemon numbers it after all of them.
            let sequence = try await publisher.postAcknowledged("order.last", payload: Self.payload(task: 99, index: 0))
            #expect(sequence == UInt64(tasks * perTask + 1))

            let received = await collect(tasks * perTask + 1, from: stream)
            #expect(received.count == tasks * perTask + 1)
            #expect(received.allSatisfy { $0.notice == nil })
            var next = [Int](repeating: 0, count: tasks)
            var outOfOrder = 0
            for notification in received.dropLast() {
                let (task, index) = Self.decode(notification)
                if task >= tasks || index != next[task] {
                    outOfOrder += 1
                } else {
                    next[task] += 1
                }
            }
            #expect(outOfOrder == 0)
            #expect(next == [Int](repeating: perTask, count: tasks))
            #expect(received.last?.name == "order.last")
            #expect(received.last?.sequence == sequence)
            // Sequence numbers rise with the order of the stream: one connection's posts are processed in order.
            #expect(zip(received, received.dropFirst()).allSatisfy { $0.sequence < $1.sequence })
            await publisher.close()
            await subscriber.close()
        }
    }

    @Test func aFullOutgoingBufferSuspendsPostAndNothingIsLostWhenTheDaemonReadsAgain() async throws {
        try await withDaemon { daemon in
            let subscriber = try await connect(daemon, name: "subscriber")
            // Long enough that the stopped daemon is a wait, not a failure.
            let publisher = try await Herald.connect(
                socketPath: daemon.socketPath,
                options: Herald.Options(clientName: "publisher", requestTimeout: .seconds(60))
            )
            let stream = try await subscriber.notifications(matching: "pressure", bufferingPolicy: .unbounded)
            // About 1 MB: more than the kernel's socket buffers and the library's outgoing buffer hold together.
            let count = 2000
            let size = 512
            let posted = Count()
            daemon.process.signal(SIGSTOP)
            // On the publisher's reader thread, so filling the buffer does not wait for the cooperative pool, which the
            // whole suite shares (a full run once took 20 s without filling it).
            let posting = Task(executorPreference: publisher.taskExecutor) {
                for index in 0..<count {
                    try await publisher.post("pressure", payload: Self.payload(task: 0, index: index, size: size))
                    posted.value.add(1, ordering: .relaxed)
                }
            }
            let suspended = try await eventually(timeout: .seconds(50)) {
                publisher.connection.writer.withLock { !$0.roomWaiters.isEmpty }
            }
            let held = publisher.connection.writer.withLock { $0.pending.count }
            let postedWhileStopped = posted.value.load(ordering: .relaxed)
            daemon.process.signal(SIGCONT)
            #expect(suspended)
            #expect(postedWhileStopped < count)
            // The buffer holds at most its bound: the suspended post is waiting outside it.
            #expect(held <= WriterState.capacity)
            try await posting.value
            #expect(posted.value.load(ordering: .relaxed) == count)

            let received = await collect(count, from: stream, timeout: .seconds(30))
            #expect(received.count == count)
            #expect(received.allSatisfy { $0.notice == nil })
            #expect(received.map { Self.decode($0).index } == Array(0..<count))
            #expect(publisher.disconnectReason == nil)
            await publisher.close()
            await subscriber.close()
        }
    }

    /// `waitUntilWritten` returns once the posts are in the socket, without the daemon's answer: it returns while
    /// the daemon is stopped, with nothing left in the outgoing buffer, and the posts arrive once it runs again.
    /// It throws once the connection has ended.
    @Test func waitUntilWrittenReturnsOnceThePostsAreInTheSocketNotOnceTheDaemonAnswers() async throws {
        try await withDaemon { daemon in
            let subscriber = try await connect(daemon, name: "subscriber")
            let publisher = try await connect(daemon, name: "publisher")
            let stream = try await subscriber.notifications(matching: "written", bufferingPolicy: .unbounded)
            daemon.process.signal(SIGSTOP)
            for index in 0..<50 {
                try await publisher.post("written", payload: Self.payload(task: 0, index: index))
            }
            try await publisher.waitUntilWritten()
            let left = publisher.connection.writer.withLock { $0.pending.count + $0.outgoing.count - $0.written }
            daemon.process.signal(SIGCONT)
            #expect(left == 0)
            let received = await collect(50, from: stream)
            #expect(received.map { Self.decode($0).index } == Array(0..<50))

            await publisher.close()
            await #expect(throws: HeraldError.self) { try await publisher.waitUntilWritten() }
            await subscriber.close()
        }
    }

    @Test func closeWritesEveryQueuedPostBeforeSayingGoodbye() async throws {
        try await withDaemon { daemon in
            let subscriber = try await connect(daemon, name: "subscriber")
            let publisher = try await connect(daemon, name: "publisher")
            let stream = try await subscriber.notifications(matching: "closing", bufferingPolicy: .unbounded)
            let count = 3000
            for index in 0..<count {
                try await publisher.post("closing", payload: Self.payload(task: 0, index: index))
            }
            await publisher.close()
            let received = await collect(count, from: stream)
            #expect(received.map { Self.decode($0).index } == Array(0..<count))
            await subscriber.close()
        }
    }

    @Test func releasingTheHeraldWritesEveryQueuedPostFirst() async throws {
        try await withDaemon { daemon in
            let subscriber = try await connect(daemon, name: "subscriber")
            let stream = try await subscriber.notifications(matching: "released", bufferingPolicy: .unbounded)
            var publisher: Herald? = try await connect(daemon, name: "publisher")
            // Stopped, the daemon reads nothing: once the kernel's socket buffer is full, posts stay in the library.
            daemon.process.signal(SIGSTOP)
            var count = 0
            var queued = false
            while !queued, count < 10_000 {
                try await publisher?.post("released", payload: Self.payload(task: 0, index: count, size: 512))
                count += 1
                queued =
                    publisher?.connection.writer.withLock { $0.written < $0.outgoing.count || !$0.pending.isEmpty }
                    ?? false
            }
            // Released with posts queued: they are written before the connection ends, not dropped with it.
            publisher = nil
            daemon.process.signal(SIGCONT)
            #expect(queued)
            let received = await collect(count, from: stream)
            #expect(received.map { Self.decode($0).index } == Array(0..<count))
            await subscriber.close()
        }
    }

    @Test func aPublisherPostingWithoutPauseHasEveryPostWrittenAndDeliveredInOrder() async throws {
        try await withDaemon { daemon in
            // Enough to fill the outgoing buffer many times over: batch after batch is written for the posting task,
            // which waits for room between them, with nothing else going on to wake the writer.
            let count = 100_000
            let subscriber = try await connect(daemon)
            let notifications = try await subscriber.notifications(matching: "burst.post", bufferingPolicy: .unbounded)
            let received = Mutex<[Int]>([])
            let consumer = Task {
                for await notification in notifications where notification.notice == nil {
                    let index = Self.decode(notification).index
                    received.withLock { $0.append(index) }
                }
            }
            let publisher = try await connect(daemon)
            let posting = Task {
                for index in 0..<count {
                    try await publisher.post("burst.post", payload: Self.payload(task: 0, index: index))
                }
            }
            // Alone this takes under a second; in the whole parallel run the posting and consuming tasks share the
            // cooperative pool's two threads with a thousand tests (69,574 had arrived after 60 s once). What is
            // checked is that every post arrives, in order.
            let complete = try await eventually(timeout: .seconds(300)) { received.withLock { $0.count } >= count }
            posting.cancel()
            consumer.cancel()
            let indices = received.withLock { $0 }
            #expect(complete, "the subscriber got \(indices.count) of \(count) posts")
            let inOrder = indices == Array(0..<count)
            #expect(inOrder, "the posts arrived out of order, or some twice")
            await publisher.close()
            await subscriber.close()
        }
    }
}
