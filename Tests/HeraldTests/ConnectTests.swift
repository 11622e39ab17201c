import Foundation
import HeraldTestSupport
import Synchronization
import Testing

@testable import Herald
@testable import HeraldCore

/// `Herald.connect` suspends its task, never blocks the thread it runs on: connect(2) and the wait for `WELCOME`
/// happen on the connection's own reader thread.
@Suite struct ConnectTests {
    /// A counter that tasks share.
    final class Count: Sendable {
        let value = Atomic<Int>(0)
    }

    /// A task executor with one thread of its own: a stand-in for a cooperative pool that a blocking call would stall,
    /// which the rest of a parallel test run cannot slow down or block in its place.
    final class OneThreadExecutor: TaskExecutor, Sendable {
        private let jobs = Mutex<[UnownedJob]>([])
        private let ready = DispatchSemaphore(value: 0)
        private let running = Atomic<Bool>(true)

        init() {
            let thread = Thread { [self] in
                while running.load(ordering: .acquiring) {
                    ready.wait()
                    let batch = jobs.withLock { jobs in
                        defer { jobs = [] }
                        return jobs
                    }
                    for job in batch { job.runSynchronously(on: asUnownedTaskExecutor()) }
                }
            }
            thread.name = "one-thread-executor"
            thread.start()
        }

        func enqueue(_ job: consuming ExecutorJob) {
            let job = UnownedJob(job)
            jobs.withLock { $0.append(job) }
            ready.signal()
        }

        /// Ends the thread once it has run what is queued.
        func shutdown() {
            running.store(false, ordering: .releasing)
            ready.signal()
        }
    }

    @Test func connectsToAStoppedDaemonLeaveTheirThreadFreeAndEachFailsAtItsTimeout() async throws {
        try await withDaemon { daemon in
            let timeout = Duration.seconds(2)
            let connects = 8
            let executor = OneThreadExecutor()
            defer { executor.shutdown() }
            daemon.process.signal(SIGSTOP)
            let finished = Count()
            // Ticks of an unrelated task on the same thread, counted only while every connect is still waiting.
            let ticksWhileWaiting = Count()
            let ticker = Task(executorPreference: executor) {
                while finished.value.load(ordering: .acquiring) == 0 {
                    try? await Task.sleep(for: .milliseconds(10))
                    if finished.value.load(ordering: .acquiring) == 0 {
                        ticksWhileWaiting.value.add(1, ordering: .relaxed)
                    }
                }
            }
            let started = ContinuousClock.now
            let attempts = (0..<connects).map { index in
                Task(executorPreference: executor) { () -> (HeraldError?, Duration) in
                    let error = await heraldError {
                        _ = try await Herald.connect(
                            socketPath: daemon.socketPath,
                            options: Herald.Options(clientName: "stalled-\(index)", requestTimeout: timeout)
                        )
                    }
                    finished.value.add(1, ordering: .acquiring)
                    // Taken here, on the executor's thread: the test's own task runs on the shared pool, which the
                    // rest of a parallel run may keep busy.
                    return (error, ContinuousClock.now - started)
                }
            }
            var errors: [HeraldError?] = []
            var waits: [Duration] = []
            for attempt in attempts {
                let (error, waited) = await attempt.value
                errors.append(error)
                waits.append(waited)
            }
            daemon.process.signal(SIGCONT)
            await ticker.value
            #expect(errors.count == connects)
            #expect(errors.allSatisfy { $0?.code == .timedOut }, "\(errors)")
            // Each waited its own timeout, side by side: blocking the one thread, they would take turns, eight
            // timeouts one after the other.
            #expect(waits.allSatisfy { $0 >= timeout }, "\(waits)")
            #expect(waits.allSatisfy { $0 < timeout * 3 }, "\(waits)")
            // 2 s of waiting is 200 ticks of 10 ms; with the thread blocked there would be none. A whole parallel run
            // on two cores let the ticker run 16 times.
            let ticks = ticksWhileWaiting.value.load(ordering: .relaxed)
            #expect(ticks >= 5, "\(ticks)")
            // The daemon answers again: a new connect works.
            let herald = try await connect(daemon)
            #expect(herald.isConnected)
            await herald.close()
        }
    }
}
