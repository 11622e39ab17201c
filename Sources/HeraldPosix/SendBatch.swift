#if os(Linux)
internal import CHeraldShim
public import Glibc

/// Non-blocking sends to many sockets in one system call, with io_uring (Linux only).
///
/// An event loop that writes a turn's output to N connections with N `send` calls wakes a reader with each
/// one; on a machine with few cores the woken reader often runs on the loop's own CPU and preempts it at the
/// return of that very call, so N sends cost N context-switch pairs and the reader wakes N times. A batch does
/// the N sends inside one `io_uring_enter`: readers are woken once it returns, and find every socket ready.
///
/// Each send is `sendmsg` with `MSG_DONTWAIT` and `MSG_NOSIGNAL`, so it behaves exactly like ``FileDescriptor/send(_:)``
/// on a non-blocking socket: it takes what fits, or reports that nothing does. io_uring completes such a send at
/// once rather than waiting for room, so when ``run()`` returns every send is done and no buffer is read again.
///
/// Usage: ``append(descriptor:vector:)`` up to ``capacity`` sends, ``run()``, read each ``result(at:)``, then
/// ``removeAll()``. The buffers and `iovec`s must stay valid until ``run()`` returns. One thread at a time.
public struct SendBatch: ~Copyable {
    private let batch: OpaquePointer
    private let operations: UnsafeMutableBufferPointer<herald_send_op>
    /// How many sends are appended.
    public private(set) var count = 0

    /// Sets up the rings for up to `capacity` sends per run.
    ///
    /// - Throws: ``SystemError`` when the kernel has no io_uring or forbids it (ENOSYS; EPERM under a seccomp
    ///   filter or with `kernel.io_uring_disabled`; ENOMEM past `RLIMIT_MEMLOCK` on older kernels). Callers
    ///   fall back to one send per socket.
    public init(capacity: Int) throws(SystemError) {
        precondition((1...4096).contains(capacity), "SendBatch(capacity: \(capacity)): 1...4096")
        guard let batch = herald_send_batch_create(UInt32(capacity)) else {
            throw SystemError(operation: "set up an io_uring for batched sends", errno: Errno.current)
        }
        self.batch = batch
        let capacity = Int(herald_send_batch_capacity(batch))
        operations = .allocate(capacity: capacity)
        operations.initialize(repeating: herald_send_op(fd: -1, iovcnt: 0, iov: nil, result: 0))
    }

    deinit {
        herald_send_batch_destroy(batch)
        operations.deallocate()
    }

    /// The most sends one run takes (the kernel may grant fewer than asked for).
    public var capacity: Int {
        operations.count
    }

    /// Adds a send of the bytes `vector` describes to the socket `descriptor`.
    ///
    /// - Returns: the send's index, for ``result(at:)``.
    @discardableResult
    public mutating func append(descriptor: Int32, vector: UnsafeBufferPointer<iovec>) -> Int {
        precondition(count < capacity, "SendBatch holds \(capacity) sends")
        precondition(!vector.isEmpty && vector.count <= 1024, "a send takes 1...1024 buffers (IOV_MAX)")
        operations[count] = herald_send_op(
            fd: descriptor,
            iovcnt: UInt32(vector.count),
            iov: vector.baseAddress,
            result: 0
        )
        count += 1
        return count - 1
    }

    /// Performs the appended sends.
    ///
    /// - Throws: ``SystemError`` when the batch could not be submitted. Sends whose ``result(at:)`` then throws
    ///   ECANCELED were not made; the others were. The batch must not be run again: drop it and send one by one.
    public mutating func run() throws(SystemError) {
        guard count > 0 else { return }
        if herald_send_batch_run(batch, operations.baseAddress, UInt32(count)) != 0 {
            throw SystemError(operation: "submit \(count) batched sends", errno: Errno.current)
        }
    }

    /// What send `index` of the last ``run()`` did, under HeraldPosix's error policy: the bytes sent, or
    /// ``IOResult/wouldBlock`` when the socket had no room; other failures throw, EBADF and EFAULT trap.
    public func result(at index: Int) throws(SystemError) -> IOResult<Int> {
        precondition(index < count, "no send \(index) in this batch")
        let operation = operations[index]
        if operation.result >= 0 { return .processed(Int(operation.result)) }
        let error = Errno(rawValue: Int32(-operation.result))
        // A signal that interrupted a send that took nothing: nothing was done, as with EAGAIN.
        if error == .interrupted { return .wouldBlock }
        return try failedSyscall(error, "send to descriptor \(operation.fd)")
    }

    /// Forgets the appended sends, to fill the batch again.
    public mutating func removeAll() {
        count = 0
    }
}
#endif
