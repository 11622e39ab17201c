import Foundation
import HeraldTestSupport
import Synchronization
import Testing

@testable import Herald
@testable import HeraldCore

/// `Herald.taskExecutor`: tasks that prefer it run on the connection's reader thread, are woken there from other
/// threads, follow the Herald to its next connection, and run on the pool once it is closed.
@Suite struct TaskExecutorTests {
    /// Where a task leaves its result, for a wait that gives up even when the task is never run.
    final class Outcome<Value: Sendable>: Sendable {
        private let value = Mutex<Value?>(nil)

        func set(_ newValue: Value) { value.withLock { $0 = newValue } }

        /// The result, waiting for it at most `timeout`; nil if it did not come.
        func wait(timeout: Duration = .seconds(20)) async -> Value? {
            _ = try? await eventually(timeout: timeout) { value.withLock { $0 } != nil }
            return value.withLock { $0 }
        }
    }

    /// Runs `body` in a task preferring `herald`'s executor and waits at most `timeout` for its result; nil if it did
    /// not end (a job the executor never ran, say), and the task is then cancelled.
    private func onReaderThread<Value: Sendable>(
        of herald: Herald,
        timeout: Duration = .seconds(20),
        _ body: @escaping @Sendable () async -> Value
    ) async -> Value? {
        let outcome = Outcome<Value>()
        let task = Task(executorPreference: herald.taskExecutor) { outcome.set(await body()) }
        let value = await outcome.wait(timeout: timeout)
        if value == nil { task.cancel() }
        return value
    }

    /// Whether the caller runs on `herald`'s reader thread now.
    private static func isOnReaderThread(_ herald: Herald) -> Bool {
        herald.connection.executor.isRunningOnReaderThread
    }

    @Test func aConsumerRunsOnTheReaderThreadAndGetsEveryPostInOrder() async throws {
        try await withDaemon { daemon in
            let observer = try await connect(daemon)
            let poster = try await connect(daemon)
            let notifications = try await observer.notifications(matching: "exec.*")
            let count = 3000
            let consumer = Task(executorPreference: observer.taskExecutor) {
                var sequences: [UInt64] = []
                var offThread = 0
                for await notification in notifications {
                    if !Self.isOnReaderThread(observer) { offThread += 1 }
                    sequences.append(notification.sequence)
                    if sequences.count == count { break }
                }
                return (sequences, offThread)
            }
            for index in 0..<count {
                try await poster.post("exec.\(index % 3)", payload: [UInt8(truncatingIfNeeded: index)])
            }
            let outcome = await onReaderThread(of: observer) { await consumer.value }
            consumer.cancel()
            let (sequences, offThread) = try #require(outcome, "the consumer did not get \(count) notifications")
            #expect(sequences == (1...UInt64(count)).map { $0 })
            #expect(offThread == 0, "\(offThread) of \(count) notifications were consumed off the reader thread")
        }
    }

    @Test func aTaskWokenFromAnotherThreadRunsThereWithNoInputOnTheSocket() async throws {
        try await withDaemon { daemon in
            let herald = try await connect(daemon)
            // Each sleep ends on a timer thread, which must wake the reader from its wait: nothing comes on the socket.
            let onThread = await onReaderThread(of: herald) {
                var onThread = 0
                for _ in 0..<20 {
                    try? await Task.sleep(for: .milliseconds(2))
                    if Self.isOnReaderThread(herald) { onThread += 1 }
                }
                return onThread
            }
            #expect(onThread == 20, "resumed on the reader thread \(onThread ?? -1) times of 20 (-1: it hung)")
            // The Herald still reads: a request's answer arrives.
            try await herald.flush()
        }
    }

    @Test func requestsAwaitedOnTheReaderThreadAreAnswered() async throws {
        try await withDaemon { daemon in
            let herald = try await connect(daemon)
            let poster = try await connect(daemon)
            try await poster.postAcknowledged("exec.kept", payload: [42], retain: true)
            // The task waits for answers only the thread it runs on can read: it must give the thread back.
            let answers = await onReaderThread(of: herald) { () -> [UInt8]? in
                guard (try? await herald.flush()) != nil else { return nil }
                return try? await herald.retainedValue(of: "exec.kept")?.payload
            }
            #expect(answers == .some([42]))
        }
    }

    @Test func tasksFollowTheHeraldToItsNextConnection() async throws {
        let directory = TemporaryDirectory()
        let first = try await TestDaemon.start(directory: directory)
        let herald = try await connect(first)
        let notifications = try await herald.notifications(matching: "exec.*")
        let outcome = Outcome<(sawReconnection: Bool, onReaderThread: Bool)>()
        let consumer = Task(executorPreference: herald.taskExecutor) {
            var sawReconnection = false
            for await notification in notifications {
                if notification.notice == .reconnected { sawReconnection = true }
                if notification.name == "exec.after" {
                    outcome.set((sawReconnection, Self.isOnReaderThread(herald)))
                    return
                }
            }
        }
        try await first.stop(signal: SIGKILL)
        let second = try await TestDaemon.start(directory: directory)
        let poster = try await connect(second)
        // Posted until the Herald has re-subscribed on the new daemon and the consumer has seen one.
        var result: (sawReconnection: Bool, onReaderThread: Bool)?
        for _ in 0..<400 where result == nil {
            try await poster.postAcknowledged("exec.after", payload: [])
            result = await outcome.wait(timeout: .milliseconds(50))
        }
        consumer.cancel()
        let (sawReconnection, onNewReader) = try #require(result, "the consumer never got exec.after")
        #expect(sawReconnection)
        #expect(onNewReader, "after reconnecting, the consumer ran off the new reader thread")
        try await second.stop()
    }

    @Test func theExecutorAndItsEventFDGoWithTheHerald() async throws {
        try await withDaemon { daemon in
            weak var executor: ReaderExecutor?
            do {
                let herald = try await connect(daemon)
                executor = herald.connection.executor
                let ran = await onReaderThread(of: herald) { Self.isOnReaderThread(herald) }
                #expect(ran == true)
                await herald.close()
            }
            // The reader thread lets go of the connection as it ends, just after close() returns.
            #expect(try await eventually { executor == nil }, "the executor, and its eventfd, outlived the Herald")
        }
    }

    @Test func tasksRunOnThePoolOnceTheHeraldIsClosed() async throws {
        try await withDaemon { daemon in
            let herald = try await connect(daemon)
            await herald.close()
            let ran = await onReaderThread(of: herald) { Self.isOnReaderThread(herald) }
            #expect(ran == .some(false))
        }
    }
}
