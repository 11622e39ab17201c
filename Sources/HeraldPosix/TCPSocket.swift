internal import CHeraldShim

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// TCP stream sockets on numeric addresses: listening, accepting and connecting, for the chat server and its tests.
///
/// Hosts are IPv4 or IPv6 literals ("127.0.0.1", "::1"), or "localhost", which means 127.0.0.1; names are not
/// resolved, so no call here waits on DNS. Every descriptor is created close-on-exec.
public enum TCPSocket {
    /// Creates a non-blocking listening socket on `host` and `port`, with `SO_REUSEADDR` so that a restarted server
    /// can bind while connections of its previous run sit in TIME_WAIT.
    ///
    /// - Parameters:
    ///   - host: an IPv4 or IPv6 literal, or "localhost".
    ///   - port: the port; 0 lets the kernel choose a free one (read it back with ``localPort(of:)``).
    ///   - backlog: how many connections may wait to be accepted.
    /// - Returns: the listening socket, non-blocking and close-on-exec.
    /// - Throws: ``SystemError`` naming the address: EINVAL for a host that is not a literal, EADDRINUSE when the
    ///   port is taken, EACCES for a privileged port.
    public static func listen(host: String, port: UInt16, backlog: Int32 = 512) throws(SystemError) -> FileDescriptor {
        let host = numericHost(host)
        let address = display(host: host, port: port)
        let family = try family(of: host, operation: "listen on \(address)")
        let socket = FileDescriptor(
            owning: try completedSyscall("create a socket for \(address)") { herald_socket_tcp(family, 1) }
        )
        _ = try completedSyscall("bind \(address)") { herald_bind_tcp(socket.rawValue, host, port) }
        try socket.listen(backlog: backlog, address: address)
        return socket
    }

    /// Connects to `host` and `port`.
    ///
    /// - Returns: a connected socket, BLOCKING and close-on-exec, with `TCP_NODELAY` set.
    /// - Throws: ``SystemError`` naming the address, e.g. ECONNREFUSED when nothing listens there.
    public static func connect(host: String, port: UInt16) throws(SystemError) -> FileDescriptor {
        let host = numericHost(host)
        let address = display(host: host, port: port)
        let family = try family(of: host, operation: "connect to \(address)")
        let socket = FileDescriptor(
            owning: try completedSyscall("create a socket for \(address)") { herald_socket_tcp(family, 0) }
        )
        _ = try completedSyscall("connect to \(address)") { herald_connect_tcp(socket.rawValue, host, port) }
        try setNoDelay(socket)
        return socket
    }

    /// Accepts one pending connection, non-blocking and close-on-exec, with `TCP_NODELAY` set.
    ///
    /// - Parameter listener: a socket from ``listen(host:port:backlog:)``.
    /// - Returns: the connection, or nil when none is pending.
    /// - Throws: ``SystemError``; as for ``UnixSocket/accept(_:)``, a server survives EMFILE, ENFILE, ECONNABORTED,
    ///   ENOBUFS and ENOMEM.
    public static func accept(_ listener: borrowing FileDescriptor) throws(SystemError) -> FileDescriptor? {
        guard let connection = try UnixSocket.accept(listener) else {
            return nil
        }
        // A peer that reset the connection between accept and here makes this fail; the caller's first read will
        // report that properly, so the error is not worth failing the accept for.
        try? setNoDelay(connection)
        return connection
    }

    /// The numeric address of `socket`'s peer: "127.0.0.1", "::1"; an IPv4 client of a dual-stack listener is shown
    /// by its IPv4 address.
    ///
    /// - Throws: ``SystemError``, e.g. ENOTCONN when the peer has already reset the connection.
    public static func peerAddress(of socket: borrowing FileDescriptor) throws(SystemError) -> String {
        var buffer = [CChar](repeating: 0, count: 64)
        _ = try buffer.withUnsafeMutableBufferPointer { (pointer) throws(SystemError) in
            try completedSyscall("read the peer address of descriptor \(socket.rawValue)") {
                herald_tcp_peer_address(socket.rawValue, pointer.baseAddress, pointer.count)
            }
        }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The local port `socket` is bound to: how a server started on port 0 learns which one it got.
    ///
    /// - Throws: ``SystemError``, e.g. ENOTSOCK.
    public static func localPort(of socket: borrowing FileDescriptor) throws(SystemError) -> UInt16 {
        UInt16(
            try completedSyscall("read the local address of descriptor \(socket.rawValue)") {
                herald_tcp_local_port(socket.rawValue)
            }
        )
    }

    /// Sets `TCP_NODELAY`: a chat line is sent at once instead of waiting for more bytes (Nagle's algorithm).
    ///
    /// - Throws: ``SystemError``, e.g. ENOTSOCK or EOPNOTSUPP for a non-TCP socket.
    public static func setNoDelay(_ socket: borrowing FileDescriptor) throws(SystemError) {
        _ = try completedSyscall("set TCP_NODELAY on descriptor \(socket.rawValue)") {
            herald_tcp_set_nodelay(socket.rawValue)
        }
    }

    /// Sets the kernel's send buffer (`SO_SNDBUF`) to `bytes`. Linux reserves twice that, and stops growing the
    /// buffer by itself (up to `tcp_wmem`'s maximum, 4 MiB by default): what a peer that stops reading can leave in
    /// the kernel is then bounded by this.
    ///
    /// - Throws: ``SystemError``, e.g. EINVAL for a negative size.
    public static func setSendBuffer(_ socket: borrowing FileDescriptor, bytes: Int) throws(SystemError) {
        _ = try completedSyscall("set SO_SNDBUF to \(bytes) on descriptor \(socket.rawValue)") {
            herald_socket_set_send_buffer(socket.rawValue, Int32(clamping: bytes))
        }
    }

    /// "localhost" as 127.0.0.1; everything else unchanged.
    private static func numericHost(_ host: String) -> String {
        host == "localhost" ? "127.0.0.1" : host
    }

    /// "127.0.0.1:8080", "[::1]:8080".
    private static func display(host: String, port: UInt16) -> String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    private static func family(of host: String, operation: String) throws(SystemError) -> Int32 {
        let family = herald_tcp_family(host)
        guard family >= 0 else {
            throw SystemError(
                operation: "\(operation) (the host is not an IPv4 or IPv6 address, nor localhost)",
                errno: .invalidArgument
            )
        }
        return family
    }
}
