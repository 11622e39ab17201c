#if os(Linux)
public import Glibc

/// The buffers for writing a turn's output to many sockets in one system call: a ``SendBatch``, the `iovec`s its
/// sends point at, what each send offered and came to, and the connections of the batch with nothing to send.
///
/// Why batch: at the end of a turn an event loop writes every connection with new output. One `send` each wakes
/// each reader in turn, and on a 2-core machine the woken reader usually runs on the loop's CPU and preempts it as
/// that `send` returns, so a turn with 30 connections cost 30 context-switch pairs (perf sched: heraldd preempted
/// 13,209 times in 0.3 s of the 1000-name workload). In one batch the readers wake after the last send, and find
/// every socket ready.
///
/// A non-copyable value an ``EventLoop`` owns and lends (`take()` it from ``EventLoop/sendBatcher``, put it back),
/// not a class: every change to a class's stored property is checked for exclusive access at run time, and those
/// checks (`swift_beginAccess`, 4.5 per connection per turn) were 3,600 of the 26,400 instructions of a turn that
/// posts one frame to 10 subscribers (callgrind).
///
/// Usage per batch: ``removeAll()``, then for each connection fill up to ``rangesPerSend`` `iovec`s at
/// ``nextVectors`` and ``appendSend(to:ranges:offered:)`` (or ``appendIdle(_:)``), then `batch.run()`, then read
/// each ``SendBatch/result(at:)`` into ``sends``' outcomes.
public struct SendBatcher: ~Copyable {
    /// The most sends in one batch by default; a turn with more connections runs several batches.
    public static var defaultCapacity: Int { 256 }
    /// The most ranges of one connection's output in one batched send; the rest goes with that connection's own
    /// sends right after.
    public static var rangesPerSend: Int { 16 }

    /// One send of the batch being built, and what it came to.
    public struct Send {
        /// The socket.
        public var fd: Int32
        /// The bytes offered.
        public var offered: Int
        /// What the send came to, once the batch ran and its owner read the result.
        public var outcome: Outcome = .full
    }

    /// What a connection's batched send came to.
    public enum Outcome {
        /// The socket took less than offered, or nothing: the rest waits for it to become writable.
        case full
        /// Everything offered was taken: more may be queued, which the connection's own sends write now.
        case wroteAll
        /// The send failed: the connection closes.
        case failed
    }

    /// The sends themselves.
    public var batch: SendBatch
    let vectors: UnsafeMutableBufferPointer<iovec>
    /// The sends of the batch being built, ``sendCount`` of them. Buffers of trivial values rather than arrays:
    /// emptying three arrays each turn was ~500 instructions.
    public let sends: UnsafeMutableBufferPointer<Send>
    /// How many of ``sends`` the batch holds.
    public private(set) var sendCount = 0
    /// Connections of the batch with nothing to send, ``idleCount`` of them: they only need their follow-up.
    public let idle: UnsafeMutableBufferPointer<Int32>
    /// How many of ``idle`` the batch holds.
    public private(set) var idleCount = 0

    /// Sets up an io_uring for up to `capacity` sends per batch.
    ///
    /// - Throws: ``SystemError`` when the kernel has no io_uring or forbids it (see ``SendBatch/init(capacity:)``).
    public init(capacity: Int = SendBatcher.defaultCapacity) throws(SystemError) {
        batch = try SendBatch(capacity: capacity)
        vectors = .allocate(capacity: batch.capacity * Self.rangesPerSend)
        sends = .allocate(capacity: batch.capacity)
        idle = .allocate(capacity: batch.capacity)
    }

    deinit {
        vectors.deallocate()
        sends.deallocate()
        idle.deallocate()
    }

    /// The most sends plus idle connections in one batch.
    public var capacity: Int { batch.capacity }

    /// Where the `iovec`s of the next send go: room for ``rangesPerSend``.
    public var nextVectors: UnsafeMutablePointer<iovec> { vectors.baseAddress! + sendCount * Self.rangesPerSend }

    /// Adds a send of the `count` ranges at ``nextVectors`` to `fd`.
    public mutating func appendSend(to fd: Int32, ranges count: Int, offered: Int) {
        batch.append(descriptor: fd, vector: UnsafeBufferPointer(start: nextVectors, count: count))
        sends.initializeElement(at: sendCount, to: Send(fd: fd, offered: offered))
        sendCount += 1
    }

    /// Adds a connection of the batch that has nothing to send.
    public mutating func appendIdle(_ fd: Int32) {
        idle.initializeElement(at: idleCount, to: fd)
        idleCount += 1
    }

    /// Forgets the batch's sends (their values are trivial: nothing to deinitialize).
    public mutating func removeAll() {
        batch.removeAll()
        sendCount = 0
        idleCount = 0
    }
}
#endif
