/// A failed system call: what Herald was doing, and the `errno` it got.
///
/// The description reads as a sentence for a log line or an `Error:` message:
/// "cannot bind /run/user/1000/herald/socket: Address already in use (errno 98)".
public struct SystemError: Error, Sendable, CustomStringConvertible {
    /// What failed, as a verb phrase naming its object, e.g. "bind /run/user/1000/herald/socket".
    public let operation: String
    /// The error the kernel reported.
    public let errno: Errno

    /// Creates an error for `operation` failing with `errno`.
    public init(operation: String, errno: Errno) {
        self.operation = operation
        self.errno = errno
    }

    /// "cannot \(operation): \(errno)".
    public var description: String {
        "cannot \(operation): \(errno)"
    }
}
