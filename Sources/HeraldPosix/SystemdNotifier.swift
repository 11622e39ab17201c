internal import CHeraldShim

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Tells the service manager about the daemon's state, as sd_notify(3) does, without libsystemd.
///
/// The protocol is one datagram of newline-separated `KEY=VALUE` lines sent to the `AF_UNIX` datagram socket named
/// by `$NOTIFY_SOCKET`: a path, or an abstract address spelled with a leading `@`. A `Type=notify` service is
/// "started" when `READY=1` arrives, so units ordered after it start only once heraldd accepts connections.
public struct SystemdNotifier: Sendable, Equatable {
    /// The address, as `$NOTIFY_SOCKET` spells it: `/run/user/1000/systemd/notify` or `@/org/freedesktop/...`.
    public let address: String

    /// Accepts an address from `$NOTIFY_SOCKET`.
    ///
    /// - Parameter address: a path starting with `/`, or an abstract name starting with `@`.
    /// - Returns: nil for anything else (empty, relative, too long): sd_notify ignores those too.
    public init?(address: String) {
        guard let first = address.utf8.first, first == UInt8(ascii: "/") || first == UInt8(ascii: "@"),
            address.utf8.count >= 2, address.utf8.count < herald_sun_path_capacity(), !address.utf8.contains(0)
        else {
            return nil
        }
        self.address = address
    }

    /// The notifier for `$NOTIFY_SOCKET`, or nil when the daemon is not supervised by a service manager that wants
    /// notifications (started by hand, or `Type=simple`).
    public static func fromEnvironment() -> SystemdNotifier? {
        guard let value = getenv("NOTIFY_SOCKET") else { return nil }
        return SystemdNotifier(address: String(cString: value))
    }

    /// Sends one notification with the given `KEY=VALUE` assignments, in order.
    ///
    /// Newlines inside a value would start a new assignment, so they are replaced by spaces.
    ///
    /// - Parameter assignments: e.g. `[("READY", "1"), ("STATUS", "Listening")]`.
    /// - Throws: ``SystemError`` when the datagram cannot be sent, e.g. ECONNREFUSED when nothing is bound to the
    ///   address any more, or EAGAIN when the manager's queue is full.
    public func notify(_ assignments: [(key: String, value: String)]) throws(SystemError) {
        try notify(assignments, passing: -1)
    }

    /// Sends one notification with the descriptor `descriptor` attached, as sd_pid_notify_with_fds(3) does: with
    /// `FDSTORE=1` and `FDNAME=`, the service manager keeps it in the unit's descriptor store and passes it back
    /// (`LISTEN_FDS`, `LISTEN_FDNAMES`) when the service starts again.
    ///
    /// - Throws: as ``notify(_:)``.
    public func notify(_ assignments: [(key: String, value: String)], passing descriptor: Int32) throws(SystemError) {
        let message = Self.message(assignments)
        let socket = FileDescriptor(
            owning: try completedSyscall("create a socket for \(address)") { herald_socket_unix_datagram() }
        )
        let address = self.address
        let raw = socket.rawValue
        // withUnsafeBytes rethrows untyped errors, so the typed one travels in a Result.
        let outcome = message.withUnsafeBytes { bytes in
            Result { () throws(SystemError) -> Int in
                try completedSyscall("notify \(address)") {
                    descriptor < 0
                        ? herald_sendto_unix(raw, address, address.utf8.count, bytes.baseAddress, bytes.count)
                        : herald_sendto_unix_with_fd(
                            raw,
                            address,
                            address.utf8.count,
                            bytes.baseAddress,
                            bytes.count,
                            descriptor
                        )
                }
            }
        }
        socket.close()
        let sent = try outcome.get()
        if sent != message.count {
            throw SystemError(
                operation: "notify \(address) (sent \(sent) of \(message.count) bytes)",
                errno: Errno(rawValue: EMSGSIZE)
            )
        }
    }

    /// `FDSTORE=1` with `FDNAME=name`: the service manager keeps `descriptor` for the service's next start.
    ///
    /// - Throws: as ``notify(_:)``.
    public func store(_ descriptor: Int32, name: String) throws(SystemError) {
        try notify([("FDSTORE", "1"), ("FDNAME", name)], passing: descriptor)
    }

    /// `FDSTOREREMOVE=1` with `FDNAME=name`: the service manager closes the descriptors it keeps under `name`.
    ///
    /// - Throws: as ``notify(_:)``.
    public func removeStored(name: String) throws(SystemError) {
        try notify([("FDSTOREREMOVE", "1"), ("FDNAME", name)])
    }

    /// `READY=1`: startup is finished and the socket accepts connections.
    ///
    /// - Parameter status: a line for `systemctl status`.
    /// - Throws: as ``notify(_:)``.
    public func ready(status: String) throws(SystemError) {
        try notify([("READY", "1"), ("STATUS", status)])
    }

    /// `STOPPING=1`: shutdown has begun.
    ///
    /// - Parameter status: a line for `systemctl status`.
    /// - Throws: as ``notify(_:)``.
    public func stopping(status: String) throws(SystemError) {
        try notify([("STOPPING", "1"), ("STATUS", status)])
    }

    /// The datagram's bytes: one `KEY=VALUE` line per assignment.
    static func message(_ assignments: [(key: String, value: String)]) -> [UInt8] {
        var bytes: [UInt8] = []
        for (key, value) in assignments {
            bytes.append(contentsOf: key.utf8)
            bytes.append(UInt8(ascii: "="))
            for byte in value.utf8 {
                bytes.append(byte == UInt8(ascii: "\n") ? UInt8(ascii: " ") : byte)
            }
            bytes.append(UInt8(ascii: "\n"))
        }
        return bytes
    }
}
