internal import CHeraldShim

// Public because `writev(_:)` takes `iovec`.
#if canImport(Glibc)
public import Glibc
#elseif canImport(Darwin)
public import Darwin
#endif

/// The owner of one open file descriptor, which it closes exactly once.
///
/// The value is `~Copyable`, so exactly one owner exists at a time: pass it `consuming` to hand it over and
/// `borrowing` to lend it. The descriptor is closed by ``close()`` or, if that was never called, when the owner goes
/// out of scope. ``release()`` gives the raw number away without closing it.
///
/// The I/O methods follow HeraldPosix's error policy: EINTR is retried, EAGAIN is returned as ``IOResult/wouldBlock``,
/// other failures throw ``SystemError``, and EBADF/EFAULT trap because they mean a bug.
public struct FileDescriptor: ~Copyable, Sendable {
    /// The descriptor number; valid while this value lives. Do not close it behind the owner's back.
    public let rawValue: Int32

    /// Takes ownership of an open descriptor; from now on this value closes it.
    ///
    /// - Parameter rawValue: an open descriptor, which nothing else may close.
    public init(owning rawValue: Int32) {
        precondition(rawValue >= 0, "FileDescriptor(owning: \(rawValue)): not a descriptor")
        self.rawValue = rawValue
    }

    /// Closes the descriptor now.
    ///
    /// Errors other than EBADF are ignored: whatever `close` returns, the descriptor number is released, and a caller
    /// cannot do anything useful with EIO from a socket. EINTR in particular is not retried, because Linux has already
    /// freed the number and another thread may have been given it; closing it again would close that one.
    public consuming func close() {
        Self.close(rawValue)
        discard self
    }

    /// Gives up ownership without closing: the caller becomes responsible for the returned descriptor.
    ///
    /// - Returns: the descriptor number.
    public consuming func release() -> Int32 {
        let rawValue = self.rawValue
        discard self
        return rawValue
    }

    deinit {
        Self.close(rawValue)
    }

    private static func close(_ rawValue: Int32) {
        #if canImport(Glibc)
        let result = Glibc.close(rawValue)
        #elseif canImport(Darwin)
        let result = Darwin.close(rawValue)
        #endif
        if result == -1, Errno.current == .badFileDescriptor {
            preconditionFailure("close(\(rawValue)) failed with EBADF: the descriptor was closed twice")
        }
    }
}

extension FileDescriptor {
    /// Reads up to `buffer.count` bytes with read(2).
    ///
    /// - Parameter buffer: where to put the bytes; must not be empty, since a 0 result means end of file.
    /// - Returns: `.processed(n)` with the number of bytes read (0 at end of file), or `.wouldBlock`.
    /// - Throws: ``SystemError`` for anything but EINTR and EAGAIN, e.g. ECONNRESET.
    public borrowing func read(into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> IOResult<Int> {
        precondition(buffer.count > 0, "read(into:) needs a non-empty buffer: a 0 result means end of file")
        #if canImport(Glibc)
        return try retryingSyscall("read from descriptor \(rawValue)") {
            Glibc.read(rawValue, buffer.baseAddress, buffer.count)
        }
        #elseif canImport(Darwin)
        return try retryingSyscall("read from descriptor \(rawValue)") {
            Darwin.read(rawValue, buffer.baseAddress, buffer.count)
        }
        #endif
    }

    /// Waits with poll(2) until this descriptor or `other` has input, at most `timeoutMilliseconds` (-1: no limit;
    /// 0: only asks). End of file, a hang-up and a pending error count as input, since a read then answers at once.
    ///
    /// - Returns: which of the two are ready; both false when the time ran out.
    /// - Throws: ``SystemError`` if poll fails (ENOMEM); a signal is not a failure: the wait starts again, whole.
    public borrowing func waitForInput(
        orFrom other: Int32,
        timeoutMilliseconds: Int32
    ) throws(SystemError) -> (this: Bool, other: Bool) {
        let ready = try waitForInput(orOutput: false, orFrom: other, timeoutMilliseconds: timeoutMilliseconds)
        return (ready.this, ready.other)
    }

    /// Waits with poll(2) until this descriptor has input, or room for output when `output` is set, or `other` has
    /// input, at most `timeoutMilliseconds` (-1: no limit). End of file, a hang-up and a pending error count as input.
    ///
    /// - Returns: which are ready; all false when the time ran out.
    /// - Throws: ``SystemError`` if poll fails (ENOMEM); a signal is not a failure: the wait starts again, whole.
    public borrowing func waitForInput(
        orOutput output: Bool,
        orFrom other: Int32,
        timeoutMilliseconds: Int32
    ) throws(SystemError) -> (this: Bool, writable: Bool, other: Bool) {
        let ready = try waitForInput(
            orOutput: output,
            orFrom: other,
            orFrom: -1,
            timeoutMilliseconds: timeoutMilliseconds
        )
        return (ready.this, ready.writable, ready.other)
    }

    /// Waits with poll(2) as ``waitForInput(orOutput:orFrom:timeoutMilliseconds:)`` does, for input on a third
    /// descriptor too; -1 for `other` or `third` leaves it out.
    ///
    /// - Returns: which are ready; all false when the time ran out.
    /// - Throws: ``SystemError`` if poll fails (ENOMEM); a signal is not a failure: the wait starts again, whole.
    public borrowing func waitForInput(
        orOutput output: Bool,
        orFrom other: Int32,
        orFrom third: Int32,
        timeoutMilliseconds: Int32
    ) throws(SystemError) -> (this: Bool, writable: Bool, other: Bool, third: Bool) {
        let ready = Int16(POLLIN | POLLHUP | POLLERR)
        // poll(2) skips an entry whose descriptor is negative.
        var entries = (
            pollfd(fd: rawValue, events: Int16(output ? POLLIN | POLLOUT : POLLIN), revents: 0),
            pollfd(fd: other, events: Int16(POLLIN), revents: 0),
            pollfd(fd: third, events: Int16(POLLIN), revents: 0)
        )
        _ = try withUnsafeMutableBytes(of: &entries) { (raw) throws(SystemError) in
            try retryingSyscall("poll descriptors \(rawValue) and \(other)") {
                poll(raw.baseAddress!.assumingMemoryBound(to: pollfd.self), third < 0 ? 2 : 3, timeoutMilliseconds)
            }.completed("poll descriptors \(rawValue) and \(other)")
        }
        for entry in [entries.0, entries.1, entries.2] where entry.revents & Int16(POLLNVAL) != 0 {
            preconditionFailure("poll of descriptor \(entry.fd) found it closed: this is a bug in Herald")
        }
        return (
            entries.0.revents & ready != 0,
            entries.0.revents & Int16(POLLOUT) != 0,
            entries.1.revents & ready != 0,
            entries.2.revents & ready != 0
        )
    }

    /// Writes up to `bytes.count` bytes with plain write(2): for pipes, files and terminals.
    ///
    /// Do not use this on a socket: a socket whose peer has gone away raises SIGPIPE on write(2). Use ``send(_:)``
    /// or ``writev(_:)`` there.
    ///
    /// - Returns: `.processed(n)` with the number of bytes written, possibly fewer than asked, or `.wouldBlock`.
    /// - Throws: ``SystemError``, e.g. EPIPE.
    public borrowing func write(_ bytes: UnsafeRawBufferPointer) throws(SystemError) -> IOResult<Int> {
        #if canImport(Glibc)
        return try retryingSyscall("write to descriptor \(rawValue)") {
            Glibc.write(rawValue, bytes.baseAddress, bytes.count)
        }
        #elseif canImport(Darwin)
        return try retryingSyscall("write to descriptor \(rawValue)") {
            Darwin.write(rawValue, bytes.baseAddress, bytes.count)
        }
        #endif
    }

    /// Writes up to `bytes.count` bytes to a socket with send(2) and `MSG_NOSIGNAL`, so a closed peer is reported as
    /// EPIPE (``Errno/brokenPipe``) and never raises SIGPIPE.
    ///
    /// - Returns: `.processed(n)` with the number of bytes sent, possibly fewer than asked, or `.wouldBlock`.
    /// - Throws: ``SystemError``, e.g. EPIPE or ECONNRESET; ENOTSOCK if this is not a socket.
    public borrowing func send(_ bytes: UnsafeRawBufferPointer) throws(SystemError) -> IOResult<Int> {
        try retryingSyscall("send to descriptor \(rawValue)") {
            herald_send(rawValue, bytes.baseAddress, bytes.count)
        }
    }

    /// Gathers the buffers in `iov` into one sendmsg(2) on a socket, with `MSG_NOSIGNAL` (see ``send(_:)``).
    ///
    /// - Parameter iov: the buffers, in order; at most `IOV_MAX` (1024 on Linux) of them.
    /// - Returns: `.processed(n)` with the total number of bytes sent, possibly ending mid-buffer, or `.wouldBlock`.
    /// - Throws: ``SystemError``, e.g. EPIPE or ECONNRESET.
    public borrowing func writev(_ iov: UnsafeBufferPointer<iovec>) throws(SystemError) -> IOResult<Int> {
        try retryingSyscall("send to descriptor \(rawValue)") {
            herald_sendv(rawValue, iov.baseAddress, Int32(iov.count))
        }
    }

    /// Writes all of `bytes`, looping over partial writes: the one write-everything loop of Herald's code.
    ///
    /// Sockets are written with `MSG_NOSIGNAL` (see ``send(_:)``), so this never raises SIGPIPE; other descriptors
    /// (stdout, a pipe) fall back to write(2) after the first ENOTSOCK.
    ///
    /// - Parameters:
    ///   - bytes: what to write.
    ///   - waitingWhenFull: for a descriptor that may be non-blocking without the caller knowing (a standard stream
    ///     inherited from a parent), wait with poll(2) until it takes more instead of throwing EAGAIN.
    /// - Throws: ``SystemError``, e.g. EPIPE once the reader is gone. Without `waitingWhenFull`, EAGAIN
    ///   (``Errno/wouldBlock``) means the descriptor is non-blocking, or that a send timeout set with
    ///   ``setSendTimeout(seconds:)`` expired; some of the bytes may have been written.
    public borrowing func writeAll(_ bytes: UnsafeRawBufferPointer, waitingWhenFull: Bool = false) throws(SystemError) {
        var remaining = bytes
        var isSocket = true
        while !remaining.isEmpty {
            let result: IOResult<Int>
            if isSocket {
                do throws(SystemError) {
                    result = try send(remaining)
                } catch {
                    guard error.errno == .notASocket else {
                        throw error
                    }
                    isSocket = false
                    continue
                }
            } else {
                result = try write(remaining)
            }
            switch result {
            case .processed(let written):
                remaining = UnsafeRawBufferPointer(rebasing: remaining[written...])
            case .wouldBlock:
                let operation = "\(isSocket ? "send" : "write") to descriptor \(rawValue)"
                guard waitingWhenFull else {
                    throw SystemError(operation: operation, errno: .wouldBlock)
                }
                var request = pollfd(fd: rawValue, events: Int16(POLLOUT), revents: 0)
                _ = try completedSyscall("poll descriptor \(rawValue) for output") { poll(&request, 1, -1) }
            }
        }
    }

    /// Whether `rawValue` is a descriptor open in this process: for the standard streams, which nothing here owns
    /// and a parent may have closed (`2>&-`), so that writing to them does not trap on EBADF.
    public static func isOpen(_ rawValue: Int32) -> Bool {
        fcntl(rawValue, F_GETFD) != -1
    }

    /// Turns `O_NONBLOCK` on or off, keeping the other status flags.
    ///
    /// - Throws: ``SystemError`` if fcntl fails.
    public borrowing func setNonBlocking(_ on: Bool) throws(SystemError) {
        let operation = "set O_NONBLOCK on descriptor \(rawValue)"
        let flags = try completedSyscall(operation) { fcntl(rawValue, F_GETFL) }
        let wanted = on ? flags | O_NONBLOCK : flags & ~O_NONBLOCK
        if wanted != flags {
            _ = try completedSyscall(operation) { fcntl(rawValue, F_SETFL, wanted) }
        }
    }
}
