internal import CHeraldShim

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `AF_UNIX` stream sockets: listening, connecting, accepting and pairs.
///
/// Every descriptor is created close-on-exec, so a process the daemon spawns does not inherit its clients.
public enum UnixSocket {
    /// The most bytes a socket path may have: `sun_path` holds 108 bytes on Linux (104 on Darwin), including the NUL.
    public static var maximumPathLength: Int {
        herald_sun_path_capacity() - 1
    }

    /// Creates a non-blocking listening socket bound to `path`.
    ///
    /// Nothing is unlinked first: if a stale socket is in the way, bind fails with EADDRINUSE and the caller decides
    /// (see ``SocketDirectory/removeStaleSocket(at:)`` and ``isAlive(path:)``).
    ///
    /// - Parameters:
    ///   - path: where to bind; at most ``maximumPathLength`` bytes.
    ///   - backlog: how many connections may wait to be accepted.
    /// - Returns: the listening socket, non-blocking and close-on-exec.
    /// - Throws: ``SystemError`` whose operation names the path: ENAMETOOLONG if the path does not fit in
    ///   `sun_path`, EADDRINUSE if something is bound there, ENOENT or EACCES for the directory.
    public static func listen(path: String, backlog: Int32 = 512) throws(SystemError) -> FileDescriptor {
        try checkPath(path, operation: "bind")
        let socket = FileDescriptor(
            owning: try completedSyscall("create a socket for \(path)") { herald_socket_unix_stream(1) }
        )
        _ = try completedSyscall("bind \(path)") {
            herald_bind_unix(socket.rawValue, path, path.utf8.count)
        }
        try socket.listen(backlog: backlog, address: path)
        return socket
    }

    /// Connects to the socket at `path`.
    ///
    /// - Parameter path: the socket to connect to; at most ``maximumPathLength`` bytes.
    /// - Returns: a connected socket, BLOCKING and close-on-exec; call ``FileDescriptor/setNonBlocking(_:)`` to use
    ///   it in an event loop.
    /// - Throws: ``SystemError`` whose operation names the path: ENOENT (no socket there), ECONNREFUSED (a socket
    ///   nobody listens on: the daemon is not running), EACCES, ENAMETOOLONG.
    public static func connect(path: String) throws(SystemError) -> FileDescriptor {
        try checkPath(path, operation: "connect to")
        let socket = FileDescriptor(
            owning: try completedSyscall("create a socket for \(path)") { herald_socket_unix_stream(0) }
        )
        // Retrying connect after EINTR is safe for AF_UNIX, unlike TCP: Linux only waits for room in the listener's
        // backlog before it creates the connection, so an interrupted connect leaves the socket unconnected.
        _ = try completedSyscall("connect to \(path)") {
            herald_connect_unix(socket.rawValue, path, path.utf8.count)
        }
        return socket
    }

    /// Connects to the Linux abstract socket `name` (D-Bus's `unix:abstract=`): an address outside the file system,
    /// given in `sun_path` after a leading NUL.
    ///
    /// - Parameter name: the abstract name, without the leading NUL; at most ``maximumPathLength`` bytes.
    /// - Returns: a connected socket, BLOCKING and close-on-exec.
    /// - Throws: ``SystemError`` whose operation names the address: ECONNREFUSED (nobody listens), ENAMETOOLONG,
    ///   EAFNOSUPPORT on a system without abstract sockets.
    public static func connect(abstract name: [UInt8]) throws(SystemError) -> FileDescriptor {
        let printable = String(decoding: name, as: UTF8.self)
        let socket = FileDescriptor(
            owning: try completedSyscall("create a socket for @\(printable)") { herald_socket_unix_stream(0) }
        )
        _ = try completedSyscall("connect to abstract socket @\(printable)") {
            name.withUnsafeBufferPointer { buffer in
                buffer.withMemoryRebound(to: CChar.self) { chars in
                    herald_connect_unix_abstract(socket.rawValue, chars.baseAddress, chars.count)
                }
            }
        }
        return socket
    }

    /// Accepts one pending connection with accept4(2).
    ///
    /// - Parameter listener: a listening socket from ``listen(path:backlog:)``.
    /// - Returns: the new connection, non-blocking and close-on-exec, or nil when none is pending.
    /// - Throws: ``SystemError``. The ones a server should survive: EMFILE and ENFILE (out of descriptors: stop
    ///   accepting for a while, the connection stays queued), ECONNABORTED (the client gave up: accept again),
    ///   ENOBUFS and ENOMEM (back off).
    public static func accept(_ listener: borrowing FileDescriptor) throws(SystemError) -> FileDescriptor? {
        let result = try retryingSyscall("accept a connection on descriptor \(listener.rawValue)") {
            herald_accept4(listener.rawValue)
        }
        switch result {
        case .processed(let rawValue): return FileDescriptor(owning: rawValue)
        case .wouldBlock: return nil
        }
    }

    /// Two connected sockets from ``pair()``.
    ///
    /// A struct rather than a tuple because Swift tuples cannot hold `~Copyable` values yet. Take the ends apart with
    /// `let first = pair.first` and `let second = pair.second` (it is `@frozen` so that other modules may).
    @frozen
    public struct Pair: ~Copyable, Sendable {
        /// One end.
        public var first: FileDescriptor
        /// The other end.
        public var second: FileDescriptor
    }

    /// Creates a pair of connected sockets with socketpair(2), blocking and close-on-exec.
    ///
    /// - Returns: the two ends; what one sends, the other reads.
    /// - Throws: ``SystemError``, e.g. EMFILE.
    public static func pair() throws(SystemError) -> Pair {
        var fds: (Int32, Int32) = (-1, -1)
        _ = try withUnsafeMutableBytes(of: &fds) { (raw) throws(SystemError) in
            let pointer = raw.baseAddress!.assumingMemoryBound(to: Int32.self)
            return try completedSyscall("create a socket pair") { herald_socketpair_unix_stream(pointer) }
        }
        return Pair(first: FileDescriptor(owning: fds.0), second: FileDescriptor(owning: fds.1))
    }

    /// Whether something is listening on `path`: a connection attempt is made and closed at once.
    ///
    /// A listener whose backlog is full still counts as alive.
    ///
    /// - Returns: true if a listener accepted the connection or has it queued; false for no socket, a stale socket
    ///   (ECONNREFUSED), or any other failure.
    public static func isAlive(path: String) -> Bool {
        guard (try? checkPath(path, operation: "connect to")) != nil,
            let rawValue = try? completedSyscall("create a socket", { herald_socket_unix_stream(1) })
        else {
            return false
        }
        let socket = FileDescriptor(owning: rawValue)
        // Non-blocking, so that a full backlog answers EAGAIN instead of hanging: a live daemon that is busy.
        let result = try? retryingSyscall("connect to \(path)") {
            herald_connect_unix(socket.rawValue, path, path.utf8.count)
        }
        socket.close()
        return result != nil
    }

    /// Rejects paths that bind or connect would mangle: empty (Linux would autobind an abstract address), with a
    /// NUL byte (silently truncated), or longer than `sun_path`.
    private static func checkPath(_ path: String, operation: String) throws(SystemError) {
        let length = path.utf8.count
        if length == 0 {
            throw SystemError(operation: "\(operation) an empty socket path", errno: .invalidArgument)
        }
        if path.utf8.contains(0) {
            throw SystemError(operation: "\(operation) \(path) (the path contains a NUL byte)", errno: .invalidArgument)
        }
        if length > maximumPathLength {
            throw SystemError(
                operation: "\(operation) \(path) (the path is \(length) bytes; a socket path holds at most "
                    + "\(maximumPathLength))",
                errno: .nameTooLong
            )
        }
    }
}
