internal import CHeraldShim

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// systemd socket activation without libsystemd: the `LISTEN_PID` / `LISTEN_FDS` protocol of sd_listen_fds(3).
///
/// systemd binds the socket itself, before the daemon runs, and starts the daemon on the first connection with the
/// listening socket as descriptor 3. Connections made in between wait in the socket's backlog, so nothing that
/// connects early is refused.
public enum SystemdActivation {
    /// The first descriptor systemd passes (`SD_LISTEN_FDS_START`).
    public static let firstDescriptor: Int32 = 3

    /// What the environment says about passed sockets, decided without touching any descriptor.
    public enum Decision: Equatable, Sendable {
        /// Not socket-activated: no `LISTEN_PID`, or it names another process (the variables were inherited),
        /// or `LISTEN_FDS` is 0.
        case notActivated
        /// Exactly one socket was passed, as descriptor 3.
        case listeningSocket
        /// The variables are malformed, or more sockets were passed than the daemon serves; the message says which.
        case invalid(String)
    }

    /// Reads `LISTEN_PID` and `LISTEN_FDS` as sd_listen_fds(3) does.
    ///
    /// - Parameters:
    ///   - environment: the process environment (only `LISTEN_PID` and `LISTEN_FDS` are read).
    ///   - pid: this process's id, which `LISTEN_PID` must name.
    /// - Returns: the decision.
    public static func decide(environment: [String: String], pid: Int32) -> Decision {
        guard let listenPID = environment["LISTEN_PID"] else { return .notActivated }
        guard let target = Int32(listenPID), target > 0 else {
            return .invalid("LISTEN_PID is '\(listenPID)', not a process id")
        }
        // Inherited from a socket-activated parent: the sockets are not ours.
        guard target == pid else { return .notActivated }
        guard let countText = environment["LISTEN_FDS"], let count = Int32(countText), count >= 0 else {
            return .invalid("LISTEN_FDS is '\(environment["LISTEN_FDS"] ?? "")', not a count of descriptors")
        }
        switch count {
        case 0: return .notActivated
        case 1: return .listeningSocket
        default:
            return .invalid(
                "systemd passed \(count) sockets (LISTEN_FDS=\(count)); heraldd serves exactly one: "
                    + "give its socket unit a single ListenStream="
            )
        }
    }

    /// Takes the listening socket systemd passed to this process, if any.
    ///
    /// Whatever the outcome, `LISTEN_PID`, `LISTEN_FDS` and `LISTEN_FDNAMES` are removed from the environment, so
    /// that no child process mistakes them for its own. The passed descriptor is checked to be a listening
    /// `AF_UNIX` stream socket, then made non-blocking and close-on-exec (systemd passes it blocking and
    /// inheritable).
    ///
    /// - Returns: the socket, or nil when this process was not socket-activated.
    /// - Throws: ``SystemdActivationError`` when the variables are malformed, more than one socket was passed, or
    ///   descriptor 3 is not a listening Unix stream socket.
    public static func takeListeningSocket() throws(SystemdActivationError) -> ActivatedSocket? {
        var stored: [StoredDescriptor] = []
        return try takeListeningSocket(storedPrefix: nil, stored: &stored)
    }

    /// A descriptor the service manager kept in the unit's descriptor store (`FDSTORE=1`) and passed back.
    public struct StoredDescriptor: Sendable, Equatable {
        /// Its `FDNAME=`, as `LISTEN_FDNAMES` names it.
        public let name: String
        /// The descriptor, now the caller's to adopt (close-on-exec is set).
        public let rawValue: Int32
    }

    /// Takes the listening socket systemd passed, if any, and the stored descriptors whose names start with
    /// `storedPrefix` (see ``takeListeningSocket()``). `LISTEN_FDNAMES` tells them apart: with it, any number of
    /// stored descriptors and at most one socket may be passed.
    ///
    /// - Throws: ``SystemdActivationError`` as ``takeListeningSocket()``.
    public static func takeListeningSocket(
        storedPrefix: String?,
        stored: inout [StoredDescriptor]
    ) throws(SystemdActivationError) -> ActivatedSocket? {
        var environment: [String: String] = [:]
        for name in ["LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"] {
            if let value = getenv(name) {
                environment[name] = String(cString: value)
            }
        }
        for name in ["LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"] {
            unsetenv(name)
        }
        var socketDescriptor = firstDescriptor
        if let storedPrefix,
            let names = environment["LISTEN_FDNAMES"]?.split(separator: ":", omittingEmptySubsequences: false),
            environment["LISTEN_PID"] == String(ProcessIdentity.currentPID()),
            let count = Int(environment["LISTEN_FDS"] ?? ""), count == names.count
        {
            var sockets: [Int32] = []
            for (index, name) in names.enumerated() {
                let descriptor = firstDescriptor + Int32(index)
                if name.hasPrefix(storedPrefix) {
                    _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
                    stored.append(StoredDescriptor(name: String(name), rawValue: descriptor))
                } else {
                    sockets.append(descriptor)
                }
            }
            environment["LISTEN_FDS"] = String(sockets.count)
            socketDescriptor = sockets.first ?? firstDescriptor
        }
        switch decide(environment: environment, pid: ProcessIdentity.currentPID()) {
        case .notActivated:
            return nil
        case .invalid(let message):
            throw SystemdActivationError(message: message)
        case .listeningSocket:
            return try adopt(socketDescriptor)
        }
    }

    private static func adopt(_ rawValue: Int32) throws(SystemdActivationError) -> ActivatedSocket {
        let descriptor: Int32 = rawValue
        let kind: Int32
        do throws(SystemError) {
            kind = try completedSyscall("inspect descriptor \(descriptor)") {
                herald_is_listening_unix_stream(descriptor)
            }
        } catch {
            throw SystemdActivationError(message: "LISTEN_FDS=1 but \(error)")
        }
        guard kind == 1 else {
            throw SystemdActivationError(
                message: "descriptor \(descriptor) from systemd is not a listening Unix stream socket: "
                    + "the socket unit needs ListenStream=<path> and Accept=no"
            )
        }
        let socket = FileDescriptor(owning: descriptor)
        do throws(SystemError) {
            try socket.setNonBlocking(true)
            _ = try completedSyscall("set FD_CLOEXEC on descriptor \(descriptor)") {
                fcntl(descriptor, F_SETFD, FD_CLOEXEC)
            }
        } catch {
            throw SystemdActivationError(message: "\(error)")
        }
        let path = boundPath(of: socket)
        return ActivatedSocket(descriptor: socket, path: path)
    }

    /// The file system path a Unix socket is bound to, or nil for an unnamed or abstract one.
    ///
    /// - Parameter socket: a bound `AF_UNIX` socket.
    /// - Returns: the path, or nil.
    public static func boundPath(of socket: borrowing FileDescriptor) -> String? {
        let capacity = herald_sun_path_capacity() + 1
        return withUnsafeTemporaryAllocation(of: CChar.self, capacity: capacity) { buffer -> String? in
            let raw = socket.rawValue
            let length = try? completedSyscall("read the address of descriptor \(raw)") {
                herald_unix_socket_path(raw, buffer.baseAddress!, capacity)
            }
            guard let length, length > 0 else { return nil }
            return String(cString: buffer.baseAddress!)
        }
    }
}

/// The listening socket systemd passed, from ``SystemdActivation/takeListeningSocket()``.
///
/// `@frozen` so that other modules may take the descriptor out (`let descriptor = socket.descriptor`), as with
/// ``UnixSocket/Pair``.
@frozen
public struct ActivatedSocket: ~Copyable, Sendable {
    /// The listening socket, non-blocking and close-on-exec.
    public var descriptor: FileDescriptor
    /// The path systemd bound it to (the unit's `ListenStream=`), or nil for an abstract socket.
    public let path: String?

    /// Wraps a passed socket.
    public init(descriptor: consuming FileDescriptor, path: String?) {
        self.descriptor = descriptor
        self.path = path
    }
}
