internal import CHeraldShim

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension FileDescriptor {
    /// Marks a bound socket as accepting connections with listen(2).
    ///
    /// - Parameters:
    ///   - backlog: how many connections may wait to be accepted.
    ///   - address: the address, for the error.
    /// - Throws: ``SystemError`` naming `address`.
    borrowing func listen(backlog: Int32, address: String) throws(SystemError) {
        _ = try completedSyscall("listen on \(address)") {
            #if canImport(Glibc)
            Glibc.listen(rawValue, backlog)
            #elseif canImport(Darwin)
            Darwin.listen(rawValue, backlog)
            #endif
        }
    }

    /// Shuts down one or both directions of a socket with shutdown(2).
    ///
    /// ENOTCONN is ignored: a peer that already went away leaves nothing to shut down. Passing `false` for both does
    /// nothing.
    ///
    /// - Parameters:
    ///   - read: stop receiving (`SHUT_RD`).
    ///   - write: stop sending, so the peer reads end of file (`SHUT_WR`).
    /// - Throws: ``SystemError``, e.g. ENOTSOCK.
    public borrowing func shutdown(read: Bool, write: Bool) throws(SystemError) {
        let how: Int32
        switch (read, write) {
        case (true, true): how = Int32(SHUT_RDWR)
        case (true, false): how = Int32(SHUT_RD)
        case (false, true): how = Int32(SHUT_WR)
        case (false, false): return
        }
        do throws(SystemError) {
            _ = try completedSyscall("shut down descriptor \(rawValue)") {
                #if canImport(Glibc)
                Glibc.shutdown(rawValue, how)
                #elseif canImport(Darwin)
                Darwin.shutdown(rawValue, how)
                #endif
            }
        } catch {
            guard error.errno == .notConnected else {
                throw error
            }
            return
        }
    }

    /// Shuts down both directions of the socket `rawValue`, which another value owns, to end a blocking call a
    /// thread is making on it: its read returns end of file. For a thread that must stop another's wait, such as a
    /// cancelled task's handshake; the caller makes sure the owner has not closed the descriptor meanwhile (its number
    /// could belong to another file by then). Errors are ignored: the socket may have ended already.
    public static func shutdown(ownedElsewhere rawValue: Int32) {
        #if canImport(Glibc)
        _ = Glibc.shutdown(rawValue, Int32(SHUT_RDWR))
        #elseif canImport(Darwin)
        _ = Darwin.shutdown(rawValue, SHUT_RDWR)
        #endif
    }

    /// Sets `SO_SNDTIMEO`: on a blocking socket, a send that cannot make progress for this long fails with EAGAIN.
    ///
    /// - Parameter seconds: the timeout, at least 0; 0 means wait forever (the kernel's convention).
    /// - Throws: ``SystemError``, e.g. ENOTSOCK.
    public borrowing func setSendTimeout(seconds: Double) throws(SystemError) {
        try setTimeout(option: SO_SNDTIMEO, seconds: seconds, name: "SO_SNDTIMEO")
    }

    /// Sets `SO_RCVTIMEO`: on a blocking socket, a read that gets nothing for this long returns `.wouldBlock`.
    ///
    /// - Parameter seconds: the timeout, at least 0; 0 means wait forever (the kernel's convention).
    /// - Throws: ``SystemError``, e.g. ENOTSOCK.
    public borrowing func setReceiveTimeout(seconds: Double) throws(SystemError) {
        try setTimeout(option: SO_RCVTIMEO, seconds: seconds, name: "SO_RCVTIMEO")
    }

    private borrowing func setTimeout(option: Int32, seconds: Double, name: String) throws(SystemError) {
        precondition(seconds >= 0 && seconds.isFinite, "a socket timeout must be finite and at least 0: \(seconds)")
        let whole = seconds.rounded(.towardZero)
        var microseconds = ((seconds - whole) * 1_000_000).rounded(.up)
        // A positive timeout below a microsecond must not turn into 0, which means "forever".
        if whole == 0, microseconds == 0, seconds > 0 {
            microseconds = 1
        }
        var value = timeval()
        value.tv_sec = .init(whole)
        value.tv_usec = .init(min(microseconds, 999_999))
        _ = try completedSyscall("set \(name) on descriptor \(rawValue)") {
            setsockopt(rawValue, SOL_SOCKET, option, &value, socklen_t(MemoryLayout<timeval>.size))
        }
    }

    /// The process, user and group of the peer of a connected Unix socket, as they were when it connected
    /// (`SO_PEERCRED`; on Darwin, getpeereid and `LOCAL_PEERPID`).
    ///
    /// - Throws: ``SystemError``, e.g. ENOTSOCK or ENOTCONN.
    public borrowing func peerCredentials() throws(SystemError) -> Credentials {
        var pid: Int32 = 0
        var uid: UInt32 = 0
        var gid: UInt32 = 0
        _ = try completedSyscall("read the peer credentials of descriptor \(rawValue)") {
            herald_peer_credentials(rawValue, &pid, &uid, &gid)
        }
        return Credentials(pid: pid, uid: uid, gid: gid)
    }
}
