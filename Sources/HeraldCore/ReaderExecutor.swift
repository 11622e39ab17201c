import HeraldPosix
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A task executor that runs its jobs on the thread that reads a ``Herald``'s socket: ``Herald/taskExecutor``.
///
/// A consumer normally runs on the global concurrent executor: each batch the reader thread routes to its stream
/// wakes a pool thread, which costs a futex wake and a context switch per batch, and puts one more runnable thread on
/// the machine's cores. A task that prefers this executor is instead resumed on the reader thread itself, right after
/// the read that fed it, as a single-threaded client written in C would do: one thread reads, routes and consumes.
///
/// How the reader thread drives it, before each read (``runJobsAndWait(for:socket:blockedOutput:writeOutput:)``):
/// 1. it runs the queued jobs; one enqueued while it runs (a consumer the read just fed) is queued, without a syscall;
/// 2. it writes the connection's outgoing buffer when a writer asked it to (``requestOutput(from:)``), after those
///    jobs, so the posts they made go out in one batch;
/// 3. it waits in `poll` for input on its socket (and for room in it while output is blocked) and on an eventfd; a
///    job enqueued or a write asked for from another thread while it waits signals the eventfd, once per wait.
///
/// Between connections (reconnecting), after the Herald closes, and where there is no eventfd (not Linux, or none
/// could be made), jobs go to the process's one ``StandbyExecutor`` thread: a preference, not a promise, but never the
/// global concurrent executor, whose worker pool would wake the process once a second from then on.
///
/// A job on the reader thread holds up reading for as long as it runs, which is flow control for a consumer; but code
/// that blocks the thread waiting for something the reader must read (a synchronous wait for a reply) would never
/// wake. Async waits are fine: they suspend and give the thread back.
final class ReaderExecutor: TaskExecutor, Sendable {
    private struct State: ~Copyable {
        /// The connection whose reader thread drives the executor; nil when none does (or none can be woken), and
        /// jobs go to the ``StandbyExecutor``.
        var owner: ObjectIdentifier?
        /// Whether that reader waits in `poll`, on the eventfd too, so a job must signal it; otherwise it is awake
        /// and runs the queued jobs before it waits again.
        var isWaiting = false
        /// That reader thread, for ``isRunningOnReaderThread``.
        var thread: pthread_t?
        var jobs: [UnownedJob] = []
        /// Whether the eventfd was signalled since the reader last drained it.
        var isSignalled = false
        /// Whether a writer asked the reader to write the connection's outgoing buffer (``requestOutput(from:)``).
        var outputRequested = false
        #if os(Linux)
        /// Lets another thread wake the reader; one per Herald, kept from one connection to the next.
        var wakeup: EventFD?
        #endif
        /// The loop that reads the owner's connection, for a Herald in a ``Herald/ReaderGroup``: jobs and requests
        /// for output go to it, and the executor's own queue and eventfd are not used.
        var loop: ReaderLoop?
        /// A descriptor of the app's, watched by the reader thread with its socket (``Herald/watchForeignDescriptor``).
        var foreign: ForeignDescriptor?
        /// Whether `foreign` was last reported watched by a reader thread.
        var foreignWatched = false

        /// Whether a reader thread of its own waits on the eventfd, and so on the foreign descriptor: the owner's,
        /// not a ``Herald/ReaderGroup``'s.
        var watchesForeign: Bool {
            owner != nil && loop == nil && wakeupDescriptor != nil
        }

        /// Notes whether the foreign descriptor is watched now.
        ///
        /// - Returns: the descriptor, when whether it is watched changed since it was last reported: the caller
        ///   reports the change, outside the lock, and its owner asks ``ReaderExecutor/isWatching(_:)``, so that of
        ///   two reports from two threads, the one handled last tells the truth whichever came first.
        mutating func foreignChange() -> ForeignDescriptor? {
            guard let foreign else { return nil }
            let watched = watchesForeign
            guard watched != foreignWatched else { return nil }
            foreignWatched = watched
            return foreign
        }

        /// The eventfd's descriptor, for `poll`; nil without one.
        var wakeupDescriptor: Int32? {
            #if os(Linux)
            switch wakeup {
            case .some(let wakeup): wakeup.rawValue
            case .none: nil
            }
            #else
            nil
            #endif
        }

        /// Signals the eventfd if the reader waits on it and it was not signalled since the reader last drained it:
        /// once per wait.
        mutating func wakeIfWaiting() {
            #if os(Linux)
            if isWaiting && !isSignalled {
                isSignalled = true
                // A non-blocking eventfd, drained once per wait, cannot reach its maximum: this does not fail.
                try? wakeup?.signal()
            }
            #endif
        }

        /// Makes `owner` the driver (nil: none), reading through `loop` when it is in a ``Herald/ReaderGroup``.
        ///
        /// - Returns: the jobs queued for the last driver, which it will not run now.
        mutating func handOver(to owner: ObjectIdentifier?, through loop: ReaderLoop?) -> [UnownedJob] {
            self.owner = owner
            self.loop = loop
            thread = nil
            isWaiting = false
            outputRequested = false
            defer { jobs = [] }
            return jobs
        }

        /// What connection `owner`'s reader thread does next: run the queued jobs, write, or wait.
        fileprivate mutating func step(for owner: ObjectIdentifier) -> Step {
            if self.owner == owner, thread == nil {
                thread = pthread_self()
            }
            // Another connection's reader drives the executor (this one is new, the other ending), or there is no
            // eventfd: wait for input alone.
            guard self.owner == owner, let wakeup = wakeupDescriptor else { return .wait(-1, nil) }
            if !jobs.isEmpty {
                defer { jobs = [] }
                return .run(jobs)
            }
            if outputRequested {
                outputRequested = false
                return .write
            }
            isWaiting = true
            return .wait(wakeup, loop == nil ? foreign : nil)
        }

        /// Makes connection `owner`'s reader the driver, awake, if no reader drives the executor and one can be
        /// woken.
        mutating func claim(for owner: ObjectIdentifier) {
            guard self.owner == nil, wakeupDescriptor != nil else { return }
            self.owner = owner
            isWaiting = false
            outputRequested = false
        }
    }

    private let state: Mutex<State>
    /// What this executor's ``Herald`` holds of its own.
    let resources = HeraldResources()

    init() {
        var initial = State()
        #if os(Linux)
        // Without an eventfd (EMFILE) the Herald works as well, with its tasks on the StandbyExecutor.
        initial.wakeup = try? EventFD()
        #endif
        state = Mutex(initial)
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let unowned = UnownedJob(job)
        let (queued, loop) = state.withLock { state -> (Bool, ReaderLoop?) in
            guard state.owner != nil else { return (false, nil) }
            if let loop = state.loop { return (false, loop) }
            state.jobs.append(unowned)
            state.wakeIfWaiting()
            return (true, nil)
        }
        if queued { return }
        // Outside this executor's lock: the loop takes its own.
        if let loop, loop.enqueue(unowned, of: self) { return }
        StandbyExecutor.shared.enqueue(unowned)
    }

    /// Whether the calling code runs on the reader thread that drives this executor now (for tests).
    var isRunningOnReaderThread: Bool {
        let (thread, loop) = state.withLock { ($0.thread, $0.loop) }
        if let loop { return loop.isLoopThread }
        guard let thread else { return false }
        return pthread_equal(thread, pthread_self()) != 0
    }

    /// Whether connection `owner`'s reader thread drives this executor now, so ``requestOutput(from:)`` can wake it.
    func isDriven(by owner: ObjectIdentifier) -> Bool {
        state.withLock { $0.owner == owner && ($0.wakeupDescriptor != nil || $0.loop != nil) }
    }

    /// Asks connection `owner`'s reader thread to write the connection's outgoing buffer, before it next waits;
    /// wakes it if it waits.
    ///
    /// - Returns: false when that reader does not drive this executor (reconnecting, or no eventfd): it cannot be
    ///   woken, and the caller writes the buffer itself.
    func requestOutput(from owner: ObjectIdentifier) -> Bool {
        let (requested, loop) = state.withLock { state -> (Bool, ReaderLoop?) in
            guard state.owner == owner else { return (false, nil) }
            if let loop = state.loop { return (false, loop) }
            guard state.wakeupDescriptor != nil else { return (false, nil) }
            state.outputRequested = true
            state.wakeIfWaiting()
            return (true, nil)
        }
        if requested { return true }
        return loop?.requestOutput(owner) ?? false
    }

    // MARK: The reader thread's side

    /// Runs the queued jobs and writes the connection's outgoing buffer when asked, then waits until the socket has
    /// input, running the jobs enqueued meanwhile; called by the reader thread of connection `owner` before each
    /// read, which then returns at once.
    ///
    /// The wait is a `poll` for input, never a blocking `read`: a thread blocked in `read` on a Unix stream socket is
    /// also woken each time the peer frees what this process wrote (the socket's write-space wake-up goes to every
    /// waiter on it), so the reader of a connection that only posts was woken for nothing once per daemon read. `poll`
    /// is woken for input only, and for room to write only while output is blocked.
    ///
    /// - Parameters:
    ///   - blockedOutput: nil when no output waits for room in the socket; otherwise the longest wait for room, in
    ///     milliseconds. Kept by the reader between calls.
    ///   - writeOutput: writes what the socket takes of the outgoing buffer; returns what `blockedOutput` becomes.
    /// - Throws: what `poll` threw; the reader ends as for a failed read.
    func runJobsAndWait(
        for owner: ObjectIdentifier,
        socket: borrowing FileDescriptor,
        blockedOutput: inout Int32?,
        writeOutput: () -> Int32?
    ) throws(SystemError) {
        while true {
            let (step, change) = state.withLock { state -> (Step, ForeignDescriptor?) in
                // The next connection's reader, once the last one has detached (see ``attach(_:)``).
                state.claim(for: owner)
                return (state.step(for: owner), state.foreignChange())
            }
            change?.onWatchingChanged()
            switch step {
            case .run(let jobs):
                for job in jobs {
                    job.runSynchronously(on: asUnownedTaskExecutor())
                }
                // Jobs that enqueued more must not starve the socket, nor the foreign descriptor: look at them before
                // the next round.
                if hasQueuedJobs {
                    let foreign = state.withLock { $0.watchesForeign ? $0.foreign : nil }
                    let ready = try socket.waitForInput(
                        orOutput: false,
                        orFrom: -1,
                        orFrom: foreign?.descriptor ?? -1,
                        timeoutMilliseconds: 0
                    )
                    if ready.third { foreign?.onReadable() }
                    if ready.this { return }
                }
            case .write:
                // After the jobs that ran before it: the posts of one turn of the reader thread go out together.
                blockedOutput = writeOutput()
            case .wait(let wakeup, let foreign):
                var timeout = blockedOutput ?? -1
                if wakeup == -1 {
                    // Writers cannot wake this reader, so they write themselves; what the socket did not take then
                    // is this reader's to write, and it looks for it now and then.
                    timeout = timeout == -1 ? 50 : min(timeout, 50)
                }
                // The foreign descriptor is held (`foreign`) until the wait returns: its owner keeps it open that long.
                let ready = try socket.waitForInput(
                    orOutput: blockedOutput != nil,
                    orFrom: wakeup,
                    orFrom: foreign?.descriptor ?? -1,
                    timeoutMilliseconds: timeout
                )
                didWake(owner)
                if ready.third, let foreign, isWatching(foreign) { foreign.onReadable() }
                if ready.writable || wakeup == -1 || (blockedOutput != nil && !ready.this && !ready.other) {
                    blockedOutput = writeOutput()
                }
                if ready.this { return }
            }
        }
    }

    /// Stops watching the foreign descriptor if it is `descriptor`, without reporting it.
    func stopWatching(_ descriptor: Int32) {
        state.withLock { state in
            guard state.foreign?.descriptor == descriptor else { return }
            state.foreign = nil
            state.foreignWatched = false
            state.wakeIfWaiting()
        }
    }

    /// Whether a reader thread watches `foreign` now: it is the descriptor registered, and a reader thread of the
    /// Herald's own drives the executor.
    func isWatching(_ foreign: ForeignDescriptor) -> Bool {
        state.withLock { $0.foreign === foreign && $0.watchesForeign }
    }

    private var hasQueuedJobs: Bool {
        state.withLock { !$0.jobs.isEmpty }
    }

    fileprivate enum Step {
        case run([UnownedJob])
        /// Write the outgoing buffer.
        case write
        /// Wait for input on the socket and on this descriptor, if it is not -1, and on the foreign descriptor.
        case wait(Int32, ForeignDescriptor?)
    }

    /// The reader woke: jobs enqueued from here on are queued for it, and a pending wake-up is consumed.
    private func didWake(_ owner: ObjectIdentifier) {
        state.withLock { state in
            guard state.owner == owner else { return }
            state.isWaiting = false
            #if os(Linux)
            if state.isSignalled {
                state.isSignalled = false
                _ = try? state.wakeup?.drain()
            }
            #endif
        }
    }

    /// Connection `owner`'s reader thread is about to start: from now on jobs are queued for it, so a task started
    /// as soon as the Herald is connected runs on that thread from its first job. Does nothing while another
    /// connection's reader still drives the executor (reconnecting); the new reader then takes over once that one
    /// has detached.
    func attach(_ owner: ObjectIdentifier) {
        let change = state.withLock { state in
            state.claim(for: owner)
            return state.foreignChange()
        }
        change?.onWatchingChanged()
    }

    /// Connection `owner`, of a Herald in a ``Herald/ReaderGroup``, is read by `loop` from now on: the executor's
    /// jobs run on the loop's thread, and requests for output go to it. It takes over from a connection that has not
    /// detached yet (reconnecting), which is ending and reads nothing more.
    func bind(_ owner: ObjectIdentifier, to loop: ReaderLoop) {
        let (orphans, change) = state.withLock { ($0.handOver(to: owner, through: loop), $0.foreignChange()) }
        change?.onWatchingChanged()
        for job in orphans where !loop.enqueue(job, of: self) {
            StandbyExecutor.shared.enqueue(job)
        }
    }

    /// Watches `foreign` from now on in place of the one watched before, if any (nil: none); reports it changed at
    /// once, then each time a reader thread starts or stops watching it.
    func watch(_ foreign: ForeignDescriptor?) {
        let change = state.withLock { state -> ForeignDescriptor? in
            state.foreign = foreign
            state.foreignWatched = !state.watchesForeign
            // A reader waiting on the descriptor replaced waits on the new one instead.
            state.wakeIfWaiting()
            return state.foreignChange()
        }
        change?.onWatchingChanged()
    }

    /// The reader thread of `owner` ends: the jobs still queued, and every later one until another reader takes
    /// over, go to the ``StandbyExecutor``.
    func detach(_ owner: ObjectIdentifier) {
        let (orphans, change) = state.withLock { state -> ([UnownedJob], ForeignDescriptor?) in
            guard state.owner == owner else { return ([], nil) }
            return (state.handOver(to: nil, through: nil), state.foreignChange())
        }
        change?.onWatchingChanged()
        for job in orphans {
            StandbyExecutor.shared.enqueue(job)
        }
    }
}

/// What one ``Herald`` holds of its own, for the tests that check it leaves nothing behind: the process's own counts
/// are shared with everything else a test run does.
final class HeraldResources: Sendable {
    /// Connections not yet freed, each holding a socket.
    let connections = Atomic<Int>(0)
    /// Threads still running: each connection's, from its handshake until its reader ends.
    let threads = Atomic<Int>(0)
}
