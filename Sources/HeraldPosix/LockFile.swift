#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An exclusive `flock` on a file, held for as long as the value lives.
///
/// heraldd takes `<socket>.lock` before it touches the socket path, so two daemons started at the same
/// moment cannot both decide the socket is stale and replace each other's. The kernel drops the lock
/// when the process dies, even by SIGKILL, so a crash never leaves it stuck.
public struct LockFile: ~Copyable, Sendable {
    private let descriptor: FileDescriptor
    /// The lock file's path.
    public let path: String

    private init(descriptor: consuming FileDescriptor, path: String) {
        self.descriptor = descriptor
        self.path = path
    }

    /// Creates `path` (mode 0600) if needed and locks it without waiting.
    ///
    /// - Returns: The held lock, or nil when another process holds it.
    /// - Throws: ``SystemError`` when the file cannot be opened or locked for another reason.
    public static func acquire(path: String) throws(SystemError) -> LockFile? {
        let raw = try completedSyscall("open \(path)") {
            open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        }
        let descriptor = FileDescriptor(owning: raw)
        switch try retryingSyscall("lock \(path)", { flock(raw, LOCK_EX | LOCK_NB) }) {
        case .processed:
            return LockFile(descriptor: descriptor, path: path)
        case .wouldBlock:
            return nil
        }
    }
}
