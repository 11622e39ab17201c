import Dispatch
import HeraldPosix
import Synchronization

/// A task executor on one thread of its own, which sleeps on a semaphore while it has no job.
///
/// The bridge starts on it, before Herald's reader exists: an `async` main, or any hop to the global concurrent
/// executor, starts libdispatch's worker pool, whose monitor then wakes the process once a second for as long as it
/// lives. With every job on this thread or on Herald's reader, an idle bridge does not wake at all.
final class ThreadExecutor: TaskExecutor, Sendable {
    private let jobs = Mutex<[UnownedJob]>([])
    // A futex-backed semaphore: waiting on it involves no libdispatch worker thread.
    private let ready = DispatchSemaphore(value: 0)

    /// Starts the thread, named `name`.
    init(name: String) {
        DetachedThread.start(name: name) { [self] in
            run()
        }
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        jobs.withLock { $0.append(job) }
        ready.signal()
    }

    private func run() -> Never {
        while true {
            ready.wait()
            let batch = jobs.withLock { jobs in
                defer { jobs.removeAll(keepingCapacity: true) }
                return jobs
            }
            for job in batch { job.runSynchronously(on: asUnownedTaskExecutor()) }
        }
    }
}
