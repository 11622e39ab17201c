#if os(Linux)
import HeraldPosix
import Glibc
import Synchronization

/// One thread of a ``Herald/ReaderGroup``: an ``EventLoop`` (HeraldPosix's, the one heraldd and the bridges run on)
/// over the sockets of the connections it was given, which also runs the jobs of the tasks that prefer their
/// ``Herald/taskExecutor`` and writes their outgoing buffers.
///
/// Per turn, the thread:
/// 1. adopts the connections handed to it since the last turn (``register(_:)``);
/// 2. runs the jobs queued for it: consumers the last turn's reads fed, tasks woken from other threads;
/// 3. writes the outgoing buffers writers asked it to write (``requestOutput(_:)``), after those jobs, so the posts
///    they made go out together, and again after each read and job, so a publisher sharing the thread with busy
///    subscribers is not held up for a whole turn;
/// 4. waits in the loop for input on any socket, room in a socket whose output is blocked, or its waker (a job or a
///    write asked for from another thread while it waits wakes it, once per wait), then reads each ready socket
///    once, at most one receive buffer's worth, so a busy connection cannot starve the others.
///
/// Nothing on the thread blocks on one connection: sockets are non-blocking, a stream whose consumer does not keep up
/// drops by its buffering policy rather than waiting, and output a socket refuses waits for `EPOLLOUT`, bounded by
/// `requestTimeout`. The thread starts with the loop's first connection and ends once it has none and no job is
/// queued; the event loop, made with the first connection, stays with the reader loop.
final class ReaderLoop: Sendable {
    private struct State: ~Copyable {
        /// Whether the thread runs.
        var isRunning = false
        /// The thread while it runs, for ``isLoopThread``.
        var thread: pthread_t?
        /// Whether the thread waits in the loop with a timeout other than 0, so new work must wake it.
        var isWaiting = false
        /// Whether the waker was used since the thread last waited.
        var isSignalled = false
        /// Connections handed over, for the thread to adopt.
        var arrivals: [Connection] = []
        /// The connections the loop reads, from ``register(_:)`` until their reading ends.
        var reading: Set<ObjectIdentifier> = []
        /// Jobs of tasks that prefer a reader executor bound to this loop, in the order they came.
        var jobs: [(job: UnownedJob, executor: ReaderExecutor)] = []
        /// Connections whose outgoing buffer a writer asked the thread to write.
        var output: [ObjectIdentifier] = []
        /// The event loop, made with the first connection.
        var io: LoopIO?
    }

    private let state = Mutex(State())
    /// Whether ``State/output`` holds a request: read without the lock between the reads and jobs of a turn.
    private let hasOutput = Atomic<Bool>(false)

    /// Whether the loop's thread runs now.
    var isRunning: Bool {
        state.withLock { $0.isRunning }
    }

    /// Whether the calling code runs on the loop's thread.
    var isLoopThread: Bool {
        state.withLock { state in
            guard let thread = state.thread else { return false }
            return pthread_equal(thread, pthread_self()) != 0
        }
    }

    /// Hands `connection`, its handshake done and its socket non-blocking, to the loop, which reads it from now on
    /// and starts its thread if it is not running. Its executor's jobs run on the loop's thread from now on.
    ///
    /// - Throws: `.io` when the event loop (an epoll instance and an eventfd) cannot be made (EMFILE); the connection
    ///   is not taken.
    func register(_ connection: Connection) throws(HeraldError) {
        let owner = ObjectIdentifier(connection)
        let start = try state.withLock { state throws(HeraldError) -> LoopIO? in
            if state.io == nil {
                do {
                    state.io = try LoopIO()
                } catch {
                    throw HeraldError(.io, "cannot make a reader loop's event loop: \(error)")
                }
            }
            state.arrivals.append(connection)
            state.reading.insert(owner)
            signal(&state)
            guard !state.isRunning else { return nil }
            state.isRunning = true
            return state.io
        }
        // Bound before the caller resumes, so a task it starts at once on the executor runs on the loop's thread.
        connection.executor.bind(owner, to: self)
        guard let io = start else { return }
        DetachedThread.start(name: "herald-reader") { [self] in
            run(io)
        }
    }

    /// Queues a job of `executor` to run on the loop's thread.
    ///
    /// - Returns: false when the thread does not run: the caller runs the job elsewhere.
    func enqueue(_ job: UnownedJob, of executor: ReaderExecutor) -> Bool {
        state.withLock { state in
            guard state.isRunning else { return false }
            state.jobs.append((job, executor))
            signal(&state)
            return true
        }
    }

    /// Asks the thread to write connection `owner`'s outgoing buffer, soon; wakes it if it waits.
    ///
    /// - Returns: false when the loop does not read that connection (its reading ended): the caller writes itself.
    func requestOutput(_ owner: ObjectIdentifier) -> Bool {
        state.withLock { state in
            guard state.reading.contains(owner) else { return false }
            state.output.append(owner)
            hasOutput.store(true, ordering: .releasing)
            signal(&state)
            return true
        }
    }

    /// Wakes the thread if it waits; once per wait, so a burst of jobs costs one `write` to the loop's eventfd.
    private func signal(_ state: inout State) {
        guard state.isWaiting, !state.isSignalled, let io = state.io else { return }
        state.isSignalled = true
        io.waker.wake()
    }

    // MARK: The loop's thread

    private enum Turn {
        case work(
            arrivals: [Connection],
            jobs: [(job: UnownedJob, executor: ReaderExecutor)],
            output: [ObjectIdentifier]
        )
        case wait
        case exit
    }

    /// The thread: turns until no connection is left and nothing is queued.
    private func run(_ io: LoopIO) {
        state.withLock { $0.thread = pthread_self() }
        var readers = LoopReaders()
        // Output to write again at once (a writer writes at most two batches per call, then reads come first).
        var again: [ObjectIdentifier] = []
        while true {
            let turn = state.withLock { state -> Turn in
                if !state.arrivals.isEmpty || !state.jobs.isEmpty || !state.output.isEmpty {
                    defer {
                        state.arrivals = []
                        state.jobs = []
                        state.output = []
                        hasOutput.store(false, ordering: .relaxed)
                    }
                    return .work(arrivals: state.arrivals, jobs: state.jobs, output: state.output)
                }
                if readers.isEmpty && again.isEmpty {
                    state.isRunning = false
                    state.thread = nil
                    return .exit
                }
                state.isWaiting = true
                return .wait
            }
            switch turn {
            case .exit:
                return
            case .work(let arrivals, let jobs, let output):
                for connection in arrivals {
                    adopt(connection, into: &readers, io)
                }
                for (job, executor) in jobs {
                    job.runSynchronously(on: executor.asUnownedTaskExecutor())
                    writeRequestedOutput(&readers, io, again: &again)
                }
                // After the jobs: the posts they made go out with the batch.
                for owner in output {
                    if let reader = readers[owner] { write(reader, io, &readers, again: &again) }
                }
            case .wait:
                break
            }
            // Output not all written last time: every turn, or a publisher whose posts alone keep the loop busy would
            // wait for its room forever.
            if !again.isEmpty {
                let writes = again
                again = []
                for owner in writes {
                    if let reader = readers[owner] { write(reader, io, &readers, again: &again) }
                }
            }
            var timeout: Int32 = 0
            if case .wait = turn, again.isEmpty {
                timeout = readers.nextDeadlineMilliseconds()
            }
            let count: Int
            do {
                // The loop drains its waker itself when the wait reports it.
                count = try io.loop.wait(timeoutMilliseconds: timeout)
            } catch {
                // Only a bad argument fails epoll_wait: a bug, not something a connection did.
                preconditionFailure("a reader loop's epoll_wait failed: \(error)")
            }
            state.withLock { state in
                state.isWaiting = false
                // A wake-up that came after the wait returned is still in the eventfd: the next wait returns at once
                // for it, one turn early, which loses nothing.
                state.isSignalled = false
            }
            for index in 0..<count {
                // Wake-ups need nothing more: the jobs and requests they stand for are read at the next turn.
                guard case .ready(let key, let events) = io.loop.event(at: index),
                    let reader = readers[key: key]
                else { continue }
                if events.contains(.writable) {
                    write(reader, io, &readers, again: &again)
                }
                if !events.intersection([.readable, .hangup, .error, .readHangup]).isEmpty {
                    if let ending = reader.connection.readOnce(&reader.read) {
                        end(reader, ending, in: &readers, io)
                    }
                }
                writeRequestedOutput(&readers, io, again: &again)
            }
            // Output blocked past its deadline: writing again fails the connection, which a later read then ends.
            for reader in readers.pastDeadline(SystemClock.monotonicNanoseconds()) {
                write(reader, io, &readers, again: &again)
            }
        }
    }

    /// Writes the outgoing buffers asked for since the turn began, if any.
    private func writeRequestedOutput(_ readers: inout LoopReaders, _ io: LoopIO, again: inout [ObjectIdentifier]) {
        guard hasOutput.load(ordering: .acquiring) else { return }
        let output = state.withLock { state in
            hasOutput.store(false, ordering: .relaxed)
            defer { state.output = [] }
            return state.output
        }
        var notYetAdopted: [ObjectIdentifier] = []
        for owner in output {
            if let reader = readers[owner] {
                write(reader, io, &readers, again: &again)
            } else {
                notYetAdopted.append(owner)
            }
        }
        guard !notYetAdopted.isEmpty else { return }
        // Connections registered since the turn began: adopted at the next turn, which writes for them then.
        state.withLock { state in
            for owner in notYetAdopted where state.reading.contains(owner) {
                state.output.append(owner)
                hasOutput.store(true, ordering: .releasing)
            }
        }
    }

    /// Watches a connection's socket; one that cannot be watched ends at once.
    private func adopt(_ connection: Connection, into readers: inout LoopReaders, _ io: LoopIO) {
        let reader = LoopReader(connection: connection, key: readers.nextKey())
        readers.insert(reader)
        do {
            try io.loop.register(connection.socket.rawValue, interest: [.readable, .readHangup], handler: reader.key)
        } catch {
            end(reader, HeraldError(.io, "cannot watch the connection's socket: \(error)"), in: &readers, io)
        }
    }

    /// Writes what the socket takes of a connection's outgoing buffer, and watches for room while it takes no more.
    private func write(
        _ reader: LoopReader,
        _ io: LoopIO,
        _ readers: inout LoopReaders,
        again: inout [ObjectIdentifier]
    ) {
        let watch: Bool
        switch reader.connection.writeOutput() {
        case .none:
            readers.setDeadline(of: reader, nil)
            watch = false
        case .some(0):
            again.append(reader.owner)
            return
        case .some(let milliseconds):
            readers.setDeadline(of: reader, SystemClock.monotonicNanoseconds() + UInt64(milliseconds) * 1_000_000)
            watch = true
        }
        guard watch != reader.watchesOutput else { return }
        reader.watchesOutput = watch
        let events: Epoll.Events = watch ? [.readable, .readHangup, .writable] : [.readable, .readHangup]
        // The socket is watched until its reader ends; a failure here is ENOMEM, and the deadline still holds.
        try? io.loop.setInterest(events, for: reader.connection.socket.rawValue)
    }

    /// The connection's reading is over: its socket leaves the event loop (before the connection can be freed and
    /// the descriptor's number reused), the reader loop forgets it, and it ends for `reason`.
    private func end(_ reader: LoopReader, _ reason: HeraldError, in readers: inout LoopReaders, _ io: LoopIO) {
        io.loop.deregister(reader.connection.socket.rawValue)
        readers.remove(reader)
        state.withLock { _ = $0.reading.remove(reader.owner) }
        reader.connection.readerEnded(reason)
    }
}

/// A reader loop's event loop and the waker other threads use. A class, since the loop is not copyable and the
/// reader loop's state hands it to the thread.
final class LoopIO: @unchecked Sendable {
    /// Waited on, and changed, by the reader loop's thread alone; handlers are the connections' keys.
    var loop: EventLoop<UInt64>
    /// Safe from any thread.
    let waker: EventLoop<UInt64>.Waker

    init() throws(SystemError) {
        var made = try EventLoop<UInt64>()
        waker = try made.makeWaker()
        loop = made
    }
}

/// What a loop keeps for one connection it reads. Used by the loop's thread alone.
final class LoopReader {
    let connection: Connection
    let owner: ObjectIdentifier
    /// The socket's handler in the event loop.
    let key: UInt64
    var read: ReadState
    /// When blocked output makes the daemon count as not reading (monotonic nanoseconds); nil while output flows.
    var deadline: UInt64?
    /// Whether the socket is watched for room to write (`EPOLLOUT`), which it is only while output is blocked.
    var watchesOutput = false

    init(connection: Connection, key: UInt64) {
        self.connection = connection
        self.owner = ObjectIdentifier(connection)
        self.key = key
        self.read = ReadState(maxPayload: Int(connection.welcome.maxPayload))
    }
}

/// A loop's connections by key and by connection, and those whose output is blocked.
struct LoopReaders {
    private var byKey: [UInt64: LoopReader] = [:]
    private var byOwner: [ObjectIdentifier: LoopReader] = [:]
    /// Keys of the readers with a deadline: few, so the loop never looks at every connection per turn.
    private var blocked: Set<UInt64> = []
    private var lastKey: UInt64 = 0

    var isEmpty: Bool { byKey.isEmpty }

    /// A key never used before.
    mutating func nextKey() -> UInt64 {
        lastKey += 1
        return lastKey
    }

    subscript(key key: UInt64) -> LoopReader? { byKey[key] }

    subscript(owner: ObjectIdentifier) -> LoopReader? { byOwner[owner] }

    mutating func insert(_ reader: LoopReader) {
        byKey[reader.key] = reader
        byOwner[reader.owner] = reader
    }

    mutating func remove(_ reader: LoopReader) {
        byKey[reader.key] = nil
        byOwner[reader.owner] = nil
        blocked.remove(reader.key)
    }

    mutating func setDeadline(of reader: LoopReader, _ deadline: UInt64?) {
        reader.deadline = deadline
        if deadline == nil { blocked.remove(reader.key) } else { blocked.insert(reader.key) }
    }

    /// The longest the loop may wait before a blocked output's deadline, in milliseconds; -1 when none is blocked.
    func nextDeadlineMilliseconds(now: UInt64 = SystemClock.monotonicNanoseconds()) -> Int32 {
        var nearest: UInt64?
        for key in blocked {
            guard let deadline = byKey[key]?.deadline else { continue }
            nearest = min(nearest ?? deadline, deadline)
        }
        guard let nearest else { return -1 }
        guard nearest > now else { return 0 }
        // Rounded up, so the loop does not wake just before the deadline and spin.
        return Int32(clamping: (nearest - now + 999_999) / 1_000_000)
    }

    /// The readers whose output deadline has passed.
    func pastDeadline(_ now: UInt64) -> [LoopReader] {
        guard !blocked.isEmpty else { return [] }
        return blocked.compactMap { key in
            guard let reader = byKey[key], let deadline = reader.deadline, deadline <= now else { return nil }
            return reader
        }
    }
}
#else
/// Without epoll there is no reader loop: a ``Herald/ReaderGroup`` is ignored, and each connection has its thread.
final class ReaderLoop: Sendable {
    var isRunning: Bool { false }
    var isLoopThread: Bool { false }
    func enqueue(_ job: UnownedJob, of executor: ReaderExecutor) -> Bool { false }
    func requestOutput(_ owner: ObjectIdentifier) -> Bool { false }
}
#endif
