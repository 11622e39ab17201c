import Foundation
import HeraldTestSupport
import Synchronization
import Testing

@testable import Herald
@testable import HeraldCore

/// `Herald.ReaderGroup`: many connections read by a few threads, through a real heraldd. Each connection keeps every
/// promise a connection with a thread of its own keeps; none can stop the others of its thread.
@Suite struct ReaderGroupTests {
    /// Connects to `daemon` with its connection read by `group`.
    func join(
        _ daemon: TestDaemon,
        _ group: Herald.ReaderGroup,
        timeout: Duration = .seconds(10)
    ) async throws
        -> Herald
    {
        try await Herald.connect(
            socketPath: daemon.socketPath,
            options: Herald.Options(clientName: "group", requestTimeout: timeout, readerGroup: group)
        )
    }

    /// Consumes `count` notifications of `stream` in a task that prefers `herald`'s executor; returns their
    /// sequence numbers and how many were consumed off the thread that reads `herald`.
    func consume(
        _ count: Int,
        of stream: HeraldNotifications,
        on herald: Herald
    ) -> Task<(sequences: [UInt64], offThread: Int), Never> {
        Task(executorPreference: herald.taskExecutor) {
            var sequences: [UInt64] = []
            var offThread = 0
            for await notification in stream where notification.notice == nil {
                if !herald.connection.executor.isRunningOnReaderThread { offThread += 1 }
                sequences.append(notification.sequence)
                if sequences.count == count { break }
            }
            return (sequences, offThread)
        }
    }

    /// Waits for `task` at most `timeout`; nil if it did not end (it is then cancelled).
    func value<Value: Sendable>(of task: Task<Value, Never>, timeout: Duration = .seconds(30)) async -> Value? {
        await withTaskGroup(of: Value?.self) { group in
            group.addTask { await task.value }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return nil
            }
            let first = await group.next() ?? nil
            if first == nil { task.cancel() }
            group.cancelAll()
            return first
        }
    }

    @Test func connectionsOfAGroupAreReadByItsThreadsAndGetEveryPostInOrder() async throws {
        try await withDaemon { daemon in
            let group = Herald.ReaderGroup(threads: 2)
            let poster = try await connect(daemon)
            var observers: [Herald] = []
            var consumers: [Task<(sequences: [UInt64], offThread: Int), Never>] = []
            let perName = 600
            for index in 0..<8 {
                let observer = try await join(daemon, group)
                observers.append(observer)
                let stream = try await observer.notifications(matching: "group.\(index)")
                consumers.append(consume(perName, of: stream, on: observer))
            }
            #expect(group.runningThreads == 2)
            for round in 0..<perName {
                for index in 0..<8 {
                    try await poster.post("group.\(index)", payload: [UInt8(truncatingIfNeeded: round)])
                }
            }
            for (index, consumer) in consumers.enumerated() {
                let outcome = try #require(await value(of: consumer), "observer \(index) did not get \(perName) posts")
                // Posts to one name, in order; the eight names were posted in turn from one connection.
                let expected = (0..<UInt64(perName)).map { $0 * 8 + UInt64(index) + 1 }
                #expect(outcome.sequences == expected)
                #expect(outcome.offThread == 0, "observer \(index): \(outcome.offThread) consumed off its thread")
            }
            for observer in observers { await observer.close() }
            await poster.close()
        }
    }

    @Test func aStreamNobodyReadsDoesNotStopTheOtherConnectionsOfItsThread() async throws {
        try await withDaemon { daemon in
            let group = Herald.ReaderGroup(threads: 1)
            let stuck = try await join(daemon, group)
            let healthy = try await join(daemon, group)
            let poster = try await connect(daemon)
            // Never read: its buffer fills and drops by its policy, without holding up the thread.
            let ignored = try await stuck.notifications(matching: "flood", bufferingPolicy: .bufferingOldest(16))
            let stream = try await healthy.notifications(matching: "flood", bufferingPolicy: .unbounded)
            let count = 5000
            for index in 0..<count {
                try await poster.post("flood", payload: [UInt8(truncatingIfNeeded: index)])
            }
            let received = await collect(count, from: stream, timeout: .seconds(30))
            #expect(received.count == count)
            #expect(received.map(\.sequence) == Array(1...UInt64(count)))
            // The stuck stream holds its 16, then the notice for what it lost.
            let kept = await collect(17, from: ignored)
            #expect(kept.prefix(16).map(\.sequence) == Array(1...16))
            #expect(kept.last?.notice == .dropped(count: UInt64(count - 16), firstSequence: 17, lastSequence: 5000))
            await stuck.close()
            await healthy.close()
            await poster.close()
        }
    }

    @Test func aThreadReadsOnWhenOneConnectionClosesAndEndsWithItsLast() async throws {
        try await withDaemon { daemon in
            let group = Herald.ReaderGroup(threads: 1)
            let first = try await join(daemon, group)
            let second = try await join(daemon, group)
            let stream = try await second.notifications(matching: "after.close")
            await first.close()
            #expect(first.disconnectReason?.code == .disconnected)
            // The other connection of the thread still reads, posts and is answered.
            try await second.post("after.close")
            #expect(await collect(1, from: stream).map(\.name) == ["after.close"])
            #expect(try await second.status().connections == 1)
            #expect(group.runningThreads == 1)
            await second.close()
            let ended = try await eventually(timeout: .seconds(10)) { group.runningThreads == 0 }
            #expect(ended, "the group's thread outlived its last connection")
            // And starts again for a new one.
            let third = try await join(daemon, group)
            #expect(group.runningThreads == 1)
            #expect(try await third.status().connections == 1)
            await third.close()
        }
    }

    @Test func aPublisherInAGroupHasEveryPostWrittenAndDeliveredInOrder() async throws {
        try await withDaemon { daemon in
            let group = Herald.ReaderGroup(threads: 1)
            let publisher = try await join(daemon, group)
            // A subscriber on the same thread, so the publisher's batches compete with its reads.
            let subscriber = try await join(daemon, group)
            let stream = try await subscriber.notifications(matching: "burst", bufferingPolicy: .unbounded)
            let count = 20_000
            for index in 0..<count {
                try await publisher.post("burst", payload: PostCoalescingTests.payload(task: 0, index: index))
            }
            let received = await collect(count, from: stream, timeout: .seconds(60))
            #expect(received.count == count)
            #expect(received.map { PostCoalescingTests.decode($0).index } == Array(0..<count))
            await publisher.close()
            await subscriber.close()
        }
    }

    @Test func aFullOutgoingBufferWaitsForRoomAndLosesNothing() async throws {
        try await withDaemon { daemon in
            let group = Herald.ReaderGroup(threads: 1)
            let subscriber = try await connect(daemon)
            let publisher = try await join(daemon, group, timeout: .seconds(60))
            let stream = try await subscriber.notifications(matching: "pressure", bufferingPolicy: .unbounded)
            let count = 2000
            let posted = PostCoalescingTests.Count()
            daemon.process.signal(SIGSTOP)
            // On the publisher's own thread, so its progress does not wait for the cooperative pool, which the whole
            // suite shares (in a full run, 1,737 of 2,000 posts were made 20 s after the daemon ran again).
            let posting = Task(executorPreference: publisher.taskExecutor) {
                for index in 0..<count {
                    let payload = PostCoalescingTests.payload(task: 0, index: index, size: 512)
                    try await publisher.post("pressure", payload: payload)
                    posted.value.add(1, ordering: .relaxed)
                }
            }
            let suspended = try await eventually(timeout: .seconds(20)) {
                publisher.connection.writer.withLock { !$0.roomWaiters.isEmpty }
            }
            daemon.process.signal(SIGCONT)
            #expect(suspended)
            // Room comes back as the daemon reads: the thread is woken for it (EPOLLOUT). Without that it would write
            // again only at its 60 s deadline, and not have the 2,000 in by then.
            let resumed = try await eventually(timeout: .seconds(50)) {
                posted.value.load(ordering: .relaxed) == count
            }
            #expect(
                resumed,
                "\(posted.value.load(ordering: .relaxed)) of \(count) posts made 50 s after the daemon ran again"
            )
            guard resumed else { return }
            try await posting.value
            let received = await collect(count, from: stream, timeout: .seconds(30))
            #expect(received.map { PostCoalescingTests.decode($0).index } == Array(0..<count))
            #expect(publisher.disconnectReason == nil)
            await publisher.close()
            await subscriber.close()
        }
    }

    @Test(arguments: [false, true])
    func aDaemonThatStopsReadingFailsTheConnectionAfterTheTimeout(inGroup: Bool) async throws {
        try await withDaemon { daemon in
            let publisher = try await connectDespiteAShortTimeout(
                socketPath: daemon.socketPath,
                options: Herald.Options(
                    clientName: "publisher",
                    requestTimeout: .milliseconds(500),
                    reconnects: false,
                    readerGroup: inGroup ? Herald.ReaderGroup(threads: 1) : nil
                )
            )
            daemon.process.signal(SIGSTOP)
            defer { daemon.process.signal(SIGCONT) }
            let posting = Task {
                for index in 0..<4000 {
                    let payload = PostCoalescingTests.payload(task: 0, index: index, size: 512)
                    try await publisher.post("stuck", payload: payload)
                }
            }
            let failed = try await eventually(timeout: .seconds(50)) { publisher.disconnectReason != nil }
            #expect(failed, "the connection outlived a daemon that read nothing for 50 s")
            #expect(publisher.disconnectReason?.code == .timedOut, "\(String(describing: publisher.disconnectReason))")
            let error = await posting.result
            #expect((try? error.get()) == nil, "posting went on after the connection failed")
        }
    }

    @Test func aGroupConnectionReconnectsAndStaysOnItsThread() async throws {
        let directory = TemporaryDirectory()
        let first = try await TestDaemon.start(directory: directory)
        let group = Herald.ReaderGroup(threads: 1)
        let herald = try await join(first, group)
        let stream = try await herald.notifications(matching: "again")
        try await first.stop(signal: SIGKILL)
        let second = try await TestDaemon.start(directory: directory)
        let poster = try await connect(second)
        let live = try await eventually(timeout: .seconds(20)) { (try? await poster.status().subscriptions) == 1 }
        try #require(live, "the stream did not subscribe again")
        try await poster.post("again")
        let consumer = consume(1, of: stream, on: herald)
        let outcome = try #require(await value(of: consumer))
        #expect(outcome.sequences.count == 1)
        #expect(outcome.offThread == 0)
        await herald.close()
        _ = try await second.stop()
    }
}
