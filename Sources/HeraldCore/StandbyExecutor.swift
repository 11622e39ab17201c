import Dispatch
import HeraldPosix
import Synchronization

/// A task executor on one thread, shared by every ``Herald`` of the process, for the jobs no reader thread can run:
/// between connections (reconnecting) and after a Herald closes.
///
/// Those jobs used to go to the global concurrent executor, whose first job starts libdispatch's worker pool; its
/// monitor then wakes the process once a second for as long as it lives, so a client that had reconnected once could
/// never be idle again (herald-dbus-bridge after heraldd restarts). This thread starts with its first job and sleeps
/// on a futex-backed semaphore while it has none, so it wakes only when there is work.
///
/// One thread runs them all in turn, which suits the short steps of a reconnection; a job must not block the thread
/// waiting for another job (as on ``Herald/taskExecutor``).
final class StandbyExecutor: TaskExecutor, Sendable {
    /// The one instance every Herald shares.
    static let shared = StandbyExecutor()

    private struct State {
        var jobs: [UnownedJob] = []
        var started = false
    }

    private let state = Mutex(State())
    private let ready = DispatchSemaphore(value: 0)

    func enqueue(_ job: consuming ExecutorJob) {
        enqueue(UnownedJob(job))
    }

    /// Queues a job taken from another executor.
    func enqueue(_ job: UnownedJob) {
        let start = state.withLock { state in
            state.jobs.append(job)
            defer { state.started = true }
            return !state.started
        }
        if start {
            DetachedThread.start(name: "herald-standby") { [self] in
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
