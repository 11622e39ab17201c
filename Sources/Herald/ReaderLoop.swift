import Foundation
import HeraldPosix
import HeraldWire
import Synchronization

/// A thread that reads many connections of the process: one epoll loop over all their sockets, as a C client serves
/// its connections, instead of one reader thread per connection. A process has one per core (``all``).
///
/// With a thread per connection, herald-bench's 100 subscriber connections were 100 threads on 2 cores, each woken
/// once per batch: fan-out 100 reached 0.38x heraldd's rate by the C client, which serves the same 100 connections
/// from one loop. Here one thread, per turn:
/// 1. adopts the connections whose handshake finished (``register(_:)``);
/// 2. runs the jobs of the tasks that prefer a ``ReaderExecutor``: consumers the last turn's reads fed, and tasks
///    woken from other threads;
/// 3. writes the outgoing buffers writers asked it to write (``requestOutput(_:)``), after those jobs, so the posts
///    they made go out in one batch per connection;
/// 4. waits in `epoll_wait` for input on any socket, room in the sockets whose output is blocked, or its eventfd (a
///    job or a write asked for from another thread while it waits signals it, once per wait); then reads each ready
///    socket once (at most one receive buffer's worth), so a busy connection cannot starve the others.
///
/// Nothing on this thread blocks on one connection: sockets are non-blocking, a stream whose consumer does not keep up
/// drops by its buffering policy rather than waiting, and output a socket refuses waits for `EPOLLOUT`, bounded by
/// `requestTimeout`. Jobs run here hold up every connection for as long as they run, which is flow control for a
/// consumer; code that blocks the thread waiting for something a reader must read would never wake.
///
/// The thread starts with the loop's first connection and ends when its last one has ended and no job is queued: a
/// process with no connection has no reader thread. The epoll instance and the eventfd, made with the first
/// connection, stay.
final class ReaderLoop: Sendable {
    /// The loops of the process, one per core: each ``Herald`` is read by one of them, taken in turn.
    ///
    /// One loop for the whole process is one core: herald-bench fan-out 100 with a single loop delivered 5.4M/s
    /// against 7.7M/s for a thread per connection, which spread the same per-delivery cost over both cores. A loop
    /// per core keeps the few threads and wake-ups of a loop and the cores of a thread per connection.
    static let all: [ReaderLoop] = (0..<max(1, ProcessInfo.processInfo.activeProcessorCount)).map { _ in ReaderLoop() }
    private static let turn = Atomic<Int>(0)

    /// The loop for a new ``Herald``: the loops in turn, so the connections of a process spread evenly over them.
    static func next() -> ReaderLoop {
        all[turn.add(1, ordering: .relaxed).oldValue % all.count]
    }

    private struct State: ~Copyable {
        /// Whether the loop's thread runs; it ends once nothing is left to read.
        var isRunning = false
        /// The loop's thread while it runs, for ``isLoopThread``.
        var thread: pthread_t?
        /// Whether the thread waits in `epoll_wait` with no timeout of 0, so new work must signal the eventfd.
        var isWaiting = false
        /// Whether the eventfd was signalled since the thread last drained it.
        var isSignalled = false
        /// Connections whose handshake is done, for the thread to add to its epoll instance.
        var arrivals: [Connection] = []
        /// The connections the loop reads, from ``register(_:)`` until their reading ends.
        var reading: Set<ObjectIdentifier> = []
        /// Jobs of tasks that prefer a ``ReaderExecutor``, in the order they were enqueued.
        var jobs: [(job: UnownedJob, executor: ReaderExecutor)] = []
        /// Connections whose outgoing buffer a writer asked the loop to write.
        var output: [Connection] = []
        /// How many times a thread was started, for tests.
        var threadsStarted = 0
        /// The kernel objects, made with the first connection.
        var io: LoopIO?
    }

    private let state = Mutex(State())
    /// Whether ``State/output`` holds a request: read without the lock between the reads and jobs of a turn, so a
    /// publisher's batch goes out as soon as it is asked for, not after every other connection of the turn.
    private let hasOutput = Atomic<Bool>(false)

    /// Whether the loop's thread runs now.
    var isRunning: Bool {
        state.withLock { $0.isRunning }
    }

    /// How many threads this loop has started in all: one per stretch of time with connections.
    var threadsStarted: Int {
        state.withLock { $0.threadsStarted }
    }

    /// Whether the calling code runs on this loop's thread.
    var isLoopThread: Bool {
        state.withLock { state in
            guard let thread = state.thread else { return false }
            return pthread_equal(thread, pthread_self()) != 0
        }
    }

    /// Whether the loop reads `connection` now: it can be asked to write its output.
    func isReading(_ connection: Connection) -> Bool {
        state.withLock { $0.reading.contains(ObjectIdentifier(connection)) }
    }

    /// Hands `connection`, its handshake done and its socket non-blocking, to the loop, which reads it from now on and
    /// starts its thread if it is not running.
    ///
    /// - Throws: `.io` when the epoll instance or the eventfd cannot be made (EMFILE); the connection is not read.
    func register(_ connection: Connection) throws(HeraldError) {
        let start = try state.withLock { state throws(HeraldError) -> LoopIO? in
            if state.io == nil {
                do {
                    state.io = try LoopIO()
                } catch {
                    throw HeraldError(.io, "cannot make the reader loop's epoll instance or eventfd: \(error)")
                }
            }
            state.arrivals.append(connection)
            state.reading.insert(ObjectIdentifier(connection))
            signal(&state)
            guard !state.isRunning else { return nil }
            state.isRunning = true
            state.threadsStarted += 1
            return state.io
        }
        guard let io = start else { return }
        let thread = Thread { [self] in run(io) }
        thread.name = "herald-reader"
        thread.start()
    }

    /// Queues a job of `executor`'s to run on the loop's thread.
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

    /// Asks the loop to write `connection`'s outgoing buffer, before it next waits; wakes it if it waits.
    ///
    /// - Returns: false when the loop does not read `connection` (its reading ended): the caller writes itself.
    func requestOutput(_ connection: Connection) -> Bool {
        state.withLock { state in
            guard state.reading.contains(ObjectIdentifier(connection)) else { return false }
            state.output.append(connection)
            hasOutput.store(true, ordering: .releasing)
            signal(&state)
            return true
        }
    }

    /// Wakes the thread if it waits; once per wait, so a burst of jobs costs one `write` to the eventfd.
    private func signal(_ state: inout State) {
        guard state.isWaiting, !state.isSignalled, let io = state.io else { return }
        state.isSignalled = true
        // A non-blocking eventfd, drained once per wait, cannot reach its maximum: this does not fail.
        try? io.wakeup.signal()
    }

    // MARK: The loop's thread

    private enum Turn {
        case work(arrivals: [Connection], jobs: [(job: UnownedJob, executor: ReaderExecutor)], output: [Connection])
        case wait
        case exit
    }

    /// The loop's thread: turns until no connection is left and nothing is queued.
    private func run(_ io: LoopIO) {
        state.withLock { $0.thread = pthread_self() }
        var readers = ReaderTable()
        let events = UnsafeMutableBufferPointer<Epoll.Event>.allocate(capacity: 256)
        defer { events.deallocate() }
        // Output to write again at once (a writer that wrote two batches and may have more).
        var again: [Connection] = []
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
            var timeout: Int32 = 0
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
                for connection in output {
                    if let reader = readers[connection] {
                        write(reader, io, &readers, again: &again)
                    }
                }
            case .wait:
                break
            }
            // Output that was not all written last turn (a writer writes at most two batches per call, so the
            // loop reads between them): every turn, or a publisher whose posts alone keep the loop busy would wait
            // for its room forever.
            if !again.isEmpty {
                let writes = again
                again = []
                for connection in writes {
                    if let reader = readers[connection] {
                        write(reader, io, &readers, again: &again)
                    }
                }
            }
            if case .wait = turn, again.isEmpty {
                timeout = readers.nextDeadlineMilliseconds()
            }
            let count: Int
            do {
                count = try io.epoll.wait(into: events, timeoutMilliseconds: timeout)
            } catch {
                // Only a bad argument fails epoll_wait: a bug, not something a connection did.
                preconditionFailure("the reader loop's epoll_wait failed: \(error)")
            }
            state.withLock { state in
                state.isWaiting = false
                if state.isSignalled {
                    state.isSignalled = false
                    _ = try? io.wakeup.drain()
                }
            }
            for event in events[..<count] where event.data != LoopIO.wakeupKey {
                guard let reader = readers[event.data] else { continue }
                if event.events.contains(.writable) {
                    write(reader, io, &readers, again: &again)
                }
                if !event.events.intersection([.readable, .hangup, .error, .readHangup]).isEmpty {
                    if let ending = reader.connection.readOnce(reader) {
                        end(reader, ending, in: &readers, io)
                    }
                }
                writeRequestedOutput(&readers, io, again: &again)
            }
            // Output blocked past its deadline: writing again fails the connection, which the next turn then ends.
            for reader in readers.pastDeadline(SystemClock.monotonicNanoseconds()) {
                write(reader, io, &readers, again: &again)
            }
        }
    }

    /// Writes the outgoing buffers asked for since the turn began, if any: a publisher whose connection shares the
    /// loop with many subscribers would otherwise wait a whole turn of theirs per batch, and the daemon with it
    /// (herald-bench fan-out 100 delivered 3.5M/s that way, against 7.7M/s with a thread per connection).
    private func writeRequestedOutput(_ readers: inout ReaderTable, _ io: LoopIO, again: inout [Connection]) {
        guard hasOutput.load(ordering: .acquiring) else { return }
        let output = state.withLock { state in
            hasOutput.store(false, ordering: .relaxed)
            defer { state.output = [] }
            return state.output
        }
        var notYetAdopted: [Connection] = []
        for connection in output {
            if let reader = readers[connection] {
                write(reader, io, &readers, again: &again)
            } else {
                notYetAdopted.append(connection)
            }
        }
        guard !notYetAdopted.isEmpty else { return }
        // Connections registered since the turn began: adopted at the next turn, which writes for them then.
        state.withLock { state in
            for connection in notYetAdopted where state.reading.contains(ObjectIdentifier(connection)) {
                state.output.append(connection)
                hasOutput.store(true, ordering: .releasing)
            }
        }
    }

    /// Adds a connection to the epoll instance; one that cannot be added ends at once.
    private func adopt(_ connection: Connection, into readers: inout ReaderTable, _ io: LoopIO) {
        let reader = ConnectionReader(connection: connection, key: readers.nextKey())
        do {
            try io.epoll.add(connection.socket.rawValue, events: [.readable, .readHangup], data: reader.key)
        } catch {
            readers.insert(reader)
            end(reader, HeraldError(.io, "cannot watch the connection's socket: \(error)"), in: &readers, io)
            return
        }
        readers.insert(reader)
    }

    /// Writes what the socket takes of a connection's outgoing buffer, and watches for room while it takes no more.
    private func write(
        _ reader: ConnectionReader,
        _ io: LoopIO,
        _ readers: inout ReaderTable,
        again: inout [Connection]
    ) {
        let outcome = reader.connection.writeOutput()
        let watch: Bool
        switch outcome {
        case .none:
            readers.setDeadline(of: reader, nil)
            watch = false
        case .some(0):
            again.append(reader.connection)
            return
        case .some(let milliseconds):
            readers.setDeadline(of: reader, SystemClock.monotonicNanoseconds() + UInt64(milliseconds) * 1_000_000)
            watch = true
        }
        guard watch != reader.watchesOutput else { return }
        reader.watchesOutput = watch
        let events: Epoll.Events = watch ? [.readable, .readHangup, .writable] : [.readable, .readHangup]
        // The socket is registered until its reader ends; a failure here is ENOMEM, and the deadline still holds.
        try? io.epoll.modify(reader.connection.socket.rawValue, events: events, data: reader.key)
    }

    /// The connection's reading is over: it leaves the epoll instance and the loop, then fails for `reason` and
    /// resumes those waiting for its reader to end.
    private func end(_ reader: ConnectionReader, _ reason: HeraldError, in readers: inout ReaderTable, _ io: LoopIO) {
        // Before the descriptor can be closed (when the connection is freed) and its number reused.
        try? io.epoll.remove(reader.connection.socket.rawValue)
        readers.remove(reader)
        state.withLock { _ = $0.reading.remove(ObjectIdentifier(reader.connection)) }
        reader.connection.readerEnded(reason)
    }
}

/// The loop's kernel objects: its epoll instance and the eventfd that wakes it, made once per process.
final class LoopIO: @unchecked Sendable {
    /// The `data` word of the eventfd's registration; connections' keys start at 1.
    static let wakeupKey: UInt64 = 0

    // Waited on by the loop's thread alone (`wait` is mutating); registrations change only there too.
    var epoll: Epoll
    let wakeup: EventFD

    init() throws(SystemError) {
        epoll = try Epoll()
        wakeup = try EventFD()
        try epoll.add(wakeup.rawValue, events: [.readable], data: Self.wakeupKey)
    }
}
