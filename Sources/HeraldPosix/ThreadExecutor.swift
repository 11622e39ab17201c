import Dispatch
import Synchronization

/// A task executor on one thread of its own, which sleeps while it has no job.
///
/// For programs that must never start Swift's global concurrent executor: once libdispatch's worker pool has run a
/// job, its workqueue monitor wakes the process once a second for as long as it lives, so a client that waits for a
/// notification could never be idle. A task that prefers this executor (`Task(executorPreference:)`,
/// `withTaskExecutorPreference(_:operation:)`) runs its nonisolated async code, and its child tasks', here.
///
/// The thread starts with the first job and sleeps on a futex-backed semaphore between jobs: nothing wakes it but a
/// job. Jobs run one at a time in the order they came, so a job must not block the thread waiting for another job of
/// this executor.
public final class ThreadExecutor: TaskExecutor, Sendable {
    private struct State {
        var jobs: [UnownedJob] = []
        var started = false
    }

    private let name: String
    private let state = Mutex(State())
    // Waiting on it involves no libdispatch worker thread.
    private let ready = DispatchSemaphore(value: 0)

    /// An executor whose thread, started with its first job, is named `name` (Linux keeps 15 bytes).
    public init(name: String) {
        self.name = name
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        enqueue(UnownedJob(job))
    }

    /// Queues a job taken from another executor.
    public func enqueue(_ job: UnownedJob) {
        let start = state.withLock { state in
            state.jobs.append(job)
            defer { state.started = true }
            return !state.started
        }
        if start {
            DetachedThread.start(name: name) { [self] in
                run()
            }
        }
        ready.signal()
    }

    private func run() -> Never {
        while true {
            ready.wait()
            let batch = state.withLock { state in
                defer { state.jobs.removeAll(keepingCapacity: true) }
                return state.jobs
            }
            for job in batch { job.runSynchronously(on: asUnownedTaskExecutor()) }
        }
    }
}
