import HeraldWire

/// What the connection's writer lock guards: the outgoing buffer, and who writes it.
///
/// Frames are encoded into ``pending`` in the order their callers took the lock, which is the order the daemon reads
/// them. One writer at a time owns the socket's sending side (``owner``): a caller writing a lone frame at once,
/// or the reader thread, asked to write for everyone. Frames added meanwhile join the next write, so a burst of posts
/// costs one `send` per batch rather than one per post: what ZeroMQ's I/O thread and hiredis's pipelining do.
struct WriterState {
    /// The bytes posts may hold in ``pending``; a post that does not fit waits (back-pressure). Large enough that
    /// a batch amortizes its syscall, small enough that a stuck daemon costs little memory: the writer holds at most
    /// this plus the batch it is writing, and one frame larger than this on its own.
    static let capacity = 65_536
    /// Buffers larger than this are not kept once the connection is idle again.
    static let idleCapacity = 4096

    /// Whether frames may still be added; false once `BYE` is queued or the connection has failed.
    var isOpen = true
    /// Whether the connection failed: nothing more is written, and waiters give up.
    var isBroken = false
    /// Encoded frames not yet handed to the writer, in order.
    var pending: [UInt8] = []
    /// The batch being written, past its first `written` bytes; the writer's own while it owns the buffer.
    var outgoing: [UInt8] = []
    var written = 0
    /// Who owns the socket's sending side: nobody, the caller that queued a frame into an idle buffer, or the reader
    /// thread, asked to write for everyone.
    var owner = Owner.none
    /// When the socket last refused output, in monotonic nanoseconds; 0 while it takes it.
    var blockedSince: UInt64 = 0
    /// When a `send` last took bytes of this connection's output, in monotonic nanoseconds; 0 before the first.
    var lastSentAt: UInt64 = 0
    /// Posts waiting for room in ``pending``.
    var roomWaiters: [Waiter] = []
    /// Callers waiting until everything queued is written.
    var drainWaiters: [Waiter] = []
    /// The id of the next waiter, so that a cancelled one can take itself out.
    private var nextWaiter: UInt64 = 0

    /// A caller waiting for the writer.
    struct Waiter {
        let id: UInt64
        let continuation: CheckedContinuation<Void, Never>
    }

    /// A fresh waiter id.
    mutating func takeWaiterID() -> UInt64 {
        nextWaiter += 1
        return nextWaiter
    }

    /// Takes waiter `id` out, if it still waits, for its cancelled caller to resume.
    mutating func removeWaiter(_ id: UInt64) -> CheckedContinuation<Void, Never>? {
        if let index = roomWaiters.firstIndex(where: { $0.id == id }) {
            return roomWaiters.remove(at: index).continuation
        }
        if let index = drainWaiters.firstIndex(where: { $0.id == id }) {
            return drainWaiters.remove(at: index).continuation
        }
        return nil
    }
    /// Why to end the connection once everything queued is written: its ``Herald`` was released with posts still
    /// queued, which are written first.
    var endWhenWritten: HeraldError?

    /// Who writes the buffer.
    enum Owner {
        case none
        case caller
        case reader
    }

    /// How long after a `send` a frame queued into an idle buffer still counts as part of a burst, in nanoseconds.
    ///
    /// Posts closer together than this are coming faster than one `send` each is worth: the reader thread writes
    /// them in one batch. One that follows a quiet spell is lone and written at once by its caller. 50 µs is about
    /// the daemon's own turn from read to delivery here (heraldd's latency p50 by the C client is 31 µs), so a post
    /// within it would most likely find the previous write not yet read, which `SIOCOUTQ` used to tell at the price
    /// of an ioctl per lone post (latency p50/p99 55.0/127.5 µs before coalescing, 60.5/145.4 with the ioctl).
    static let burstGapNanoseconds: UInt64 = 50_000

    /// Whether a frame queued into an idle buffer at `now` (monotonic nanoseconds) is lone: no `send` took output
    /// within ``burstGapNanoseconds`` before it, so its caller writes it at once.
    func isLone(at now: UInt64) -> Bool {
        lastSentAt == 0 || now &- lastSentAt >= Self.burstGapNanoseconds
    }

    /// Appends `frame`, encoded in place.
    mutating func append(_ frame: Frame, size: Int) {
        let start = pending.count
        pending.append(contentsOf: repeatElement(0, count: size))
        pending.withUnsafeMutableBytes { raw in
            _ = frame.encode(to: UnsafeMutableRawBufferPointer(rebasing: raw[start..<start + size]))
        }
    }

    /// Whether a post of `size` bytes fits now: in the room left, or alone in an empty buffer.
    func hasRoom(for size: Int) -> Bool {
        pending.isEmpty || pending.count + size <= Self.capacity
    }

    /// The writer is done, with everything queued written: nobody owns the buffer now.
    ///
    /// - Returns: the waiters to resume, and why to end the connection now, if it is to end once written.
    mutating func finishWriting() -> (waiters: [CheckedContinuation<Void, Never>], end: HeraldError?) {
        owner = .none
        blockedSince = 0
        becameIdle()
        return (takeWaiters(), endWhenWritten)
    }

    /// Everything queued is written: the buffers are emptied, and given back if a burst made them large.
    mutating func becameIdle() {
        written = 0
        outgoing.removeAll(keepingCapacity: outgoing.capacity <= Self.idleCapacity)
        if pending.isEmpty, pending.capacity > Self.idleCapacity { pending = [] }
    }

    /// Takes the waiters to resume once the writer stops or fails.
    mutating func takeWaiters() -> [CheckedContinuation<Void, Never>] {
        defer {
            roomWaiters = []
            drainWaiters = []
        }
        return (roomWaiters + drainWaiters).map(\.continuation)
    }
}
