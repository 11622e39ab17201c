import Foundation
import HeraldPosix
import Synchronization

/// A task executor that runs its jobs on the thread that reads a ``Herald``'s socket: ``Herald/taskExecutor``.
///
/// A consumer normally runs on the global concurrent executor: each batch the reader routes to its stream wakes a
/// pool thread, which costs a futex wake and a context switch per batch, and puts one more runnable thread on the
/// machine's cores. A task that prefers this executor is instead resumed on the reader thread itself, right after the
/// read that fed it, as a single-threaded client written in C would do: one thread reads, routes and consumes.
///
/// That thread is one of the process's ``ReaderLoop``s, which reads this Herald's connection and others: the jobs of
/// all the Heralds it reads run there, in the order they were enqueued, between its reads (see ``ReaderLoop`` for its
/// turn). A Herald keeps its loop from one connection to the next.
///
/// Between connections (reconnecting), after the Herald closes, and while the loop does not run, jobs go to the
/// global concurrent executor: a preference, not a promise.
///
/// A job on the reader thread holds up reading for as long as it runs, which is flow control for a consumer; but code
/// that blocks the thread waiting for something the reader must read (a synchronous wait for a reply) would never
/// wake. Async waits are fine: they suspend and give the thread back.
final class ReaderExecutor: TaskExecutor, Sendable {
    /// The loop whose thread runs the jobs.
    let loop: ReaderLoop
    /// The connection the loop reads for this executor's Herald; nil between connections and once it is closed.
    private let owner = Mutex<ObjectIdentifier?>(nil)

    init(loop: ReaderLoop = .next()) {
        self.loop = loop
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let unowned = UnownedJob(job)
        if owner.withLock({ $0 != nil }), loop.enqueue(unowned, of: self) { return }
        globalConcurrentExecutor.enqueue(ExecutorJob(unowned))
    }

    /// Whether the calling code runs on the reader thread that drives this executor now (for tests).
    var isRunningOnReaderThread: Bool {
        owner.withLock { $0 != nil } && loop.isLoopThread
    }

    /// Connection `owner`'s reading is about to start: from now on jobs are queued for the loop, so a task started
    /// as soon as the Herald is connected runs on the reader thread from its first job. A new connection takes over
    /// from one that is still ending (reconnecting).
    func attach(_ owner: ObjectIdentifier) {
        self.owner.withLock { $0 = owner }
    }

    /// The reading of `owner` ended: later jobs, until another connection attaches, go to the global concurrent
    /// executor.
    func detach(_ owner: ObjectIdentifier) {
        self.owner.withLock { current in
            if current == owner { current = nil }
        }
    }
}
