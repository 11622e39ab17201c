internal import CHeraldShim

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An `errno` value from a failed system call.
///
/// Compare against the static constants (`error == .wouldBlock`, or `case .addressInUse:` in a `switch`) rather than
/// raw numbers, which differ between Linux and Darwin.
public struct Errno: Error, Hashable, Sendable, CustomStringConvertible {
    /// The raw `errno` number.
    public let rawValue: Int32

    /// Wraps a raw `errno` number.
    public init(rawValue: Int32) {
        self.rawValue = rawValue
    }

    /// The calling thread's current `errno`; meaningful only right after a call that failed.
    public static var current: Errno {
        Errno(rawValue: errno)
    }

    /// The system's text for this error and its number, e.g. "Address already in use (errno 98)".
    public var description: String {
        // Large enough for every glibc and Darwin message; strerror_r truncates otherwise.
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: 256) { buffer in
            let text = String(cString: herald_strerror(rawValue, buffer.baseAddress!, buffer.count))
            return "\(text) (errno \(rawValue))"
        }
    }

    /// EAGAIN (the same number as EWOULDBLOCK on Linux and Darwin): the operation would block.
    public static let wouldBlock = Errno(rawValue: EAGAIN)
    /// EINTR: a signal interrupted the call.
    public static let interrupted = Errno(rawValue: EINTR)
    /// ENOENT: no such file or directory.
    public static let noEntry = Errno(rawValue: ENOENT)
    /// EEXIST: the file already exists.
    public static let alreadyExists = Errno(rawValue: EEXIST)
    /// ECONNREFUSED: nothing is listening on the socket path.
    public static let connectionRefused = Errno(rawValue: ECONNREFUSED)
    /// ECONNABORTED: a connection was aborted before `accept` picked it up.
    public static let connectionAborted = Errno(rawValue: ECONNABORTED)
    /// EADDRINUSE: the socket path is already bound.
    public static let addressInUse = Errno(rawValue: EADDRINUSE)
    /// EMFILE: this process has no descriptors left.
    public static let tooManyOpenFiles = Errno(rawValue: EMFILE)
    /// ENFILE: the system-wide file table is full.
    public static let outOfFileTable = Errno(rawValue: ENFILE)
    /// EPIPE: the peer closed its end; with `MSG_NOSIGNAL` this replaces SIGPIPE.
    public static let brokenPipe = Errno(rawValue: EPIPE)
    /// ECONNRESET: the peer closed the connection with unread data.
    public static let connectionReset = Errno(rawValue: ECONNRESET)
    /// ENOTCONN: the socket is not connected.
    public static let notConnected = Errno(rawValue: ENOTCONN)
    /// ENOTSOCK: the descriptor is not a socket.
    public static let notASocket = Errno(rawValue: ENOTSOCK)
    /// EACCES: permission denied.
    public static let permissionDenied = Errno(rawValue: EACCES)
    /// ETIMEDOUT: the operation timed out.
    public static let timedOut = Errno(rawValue: ETIMEDOUT)
    /// EBADF: not an open descriptor. HeraldPosix traps on it rather than throwing, since it means a bug.
    public static let badFileDescriptor = Errno(rawValue: EBADF)
    /// ENAMETOOLONG: the path, or a socket path, is too long.
    public static let nameTooLong = Errno(rawValue: ENAMETOOLONG)
    /// EINVAL: an invalid argument.
    public static let invalidArgument = Errno(rawValue: EINVAL)
}
