#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The directory that holds the daemon's socket, and the socket file itself.
///
/// The socket's directory must be private to its user: anyone who can write to it could replace the socket with
/// their own and read every notification.
public enum SocketDirectory {
    /// Makes sure the directory containing `path` exists and is private to this user.
    ///
    /// Missing directories on the way are created, each with mode 0700 (chmod after mkdir, so the umask cannot
    /// loosen it). Then the socket's immediate parent must be a directory (not a symbolic link), owned by the
    /// effective user ID, with permission bits exactly 0700.
    ///
    /// - Parameter path: the socket path, e.g. from ``SocketPath/resolve(explicit:)``.
    /// - Throws: ``SocketDirectoryError`` saying what is wrong and how to fix it.
    public static func prepare(forSocketAt path: String) throws(SocketDirectoryError) {
        let directory = parent(of: path)
        try createMissing(directory)
        var status = stat()
        if let error = call("inspect \(directory)", { lstat(directory, &status) }) {
            throw SocketDirectoryError(directory: directory, code: .cannotInspect(error))
        }
        guard status.st_mode & fileTypeMask == directoryType else {
            throw SocketDirectoryError(directory: directory, code: .notADirectory)
        }
        let owner = UInt32(status.st_uid)
        let expected = ProcessIdentity.effectiveUID()
        guard owner == expected else {
            throw SocketDirectoryError(directory: directory, code: .wrongOwner(owner: owner, expected: expected))
        }
        let permissions = UInt32(status.st_mode) & 0o777
        guard permissions == 0o700 else {
            throw SocketDirectoryError(directory: directory, code: .wrongMode(mode: permissions))
        }
    }

    /// Removes a socket left behind by a daemon that is gone.
    ///
    /// Check ``UnixSocket/isAlive(path:)`` first: this removes a live daemon's socket just as readily.
    ///
    /// - Parameter path: the socket path. Nothing there is fine.
    /// - Throws: ``SystemError`` if something other than a socket is at `path` (EEXIST; it is left alone, since it
    ///   may be someone's file), or if lstat or unlink fails.
    public static func removeStaleSocket(at path: String) throws(SystemError) {
        var status = stat()
        do throws(SystemError) {
            _ = try completedSyscall("inspect \(path)") { lstat(path, &status) }
        } catch {
            guard error.errno == .noEntry else {
                throw error
            }
            return
        }
        guard status.st_mode & fileTypeMask == socketType else {
            throw SystemError(operation: "replace \(path), which is not a socket", errno: .alreadyExists)
        }
        do throws(SystemError) {
            _ = try completedSyscall("remove the stale socket \(path)") { unlink(path) }
        } catch {
            guard error.errno == .noEntry else {
                throw error
            }
            // Someone else removed it first; the goal is reached.
            return
        }
    }

    /// Creates the directories of `directory` that do not exist yet, from the top down, each with mode 0700.
    private static func createMissing(_ directory: String) throws(SocketDirectoryError) {
        var status = stat()
        switch call("inspect \(directory)", { lstat(directory, &status) }) {
        case nil:
            return
        case .noEntry?:
            break
        case let error?:
            throw SocketDirectoryError(directory: directory, code: .cannotInspect(error))
        }
        let parentDirectory = parent(of: directory)
        if parentDirectory != directory {
            try createMissing(parentDirectory)
        }
        switch call("create \(directory)", { mkdir(directory, 0o700) }) {
        case nil:
            break
        case .alreadyExists?:
            // Another process won the race; the caller checks what it made rather than silently changing it.
            return
        case let error?:
            throw SocketDirectoryError(directory: directory, code: .cannotCreate(error))
        }
        // mkdir applied the umask, which can only remove bits; chmod so the result does not depend on it.
        if let error = call("change the mode of \(directory)", { chmod(directory, 0o700) }) {
            throw SocketDirectoryError(directory: directory, code: .cannotCreate(error))
        }
    }

    /// Runs a call through the module's syscall policy and returns its errno instead of throwing, so the caller can
    /// turn it into a ``SocketDirectoryError``.
    private static func call(_ operation: @autoclosure () -> String, _ body: () -> Int32) -> Errno? {
        do {
            _ = try completedSyscall(operation(), body)
            return nil
        } catch {
            return error.errno
        }
    }

    /// The directory part of `path`: everything before the last "/", "/" for a top-level entry, "." for a bare name.
    static func parent(of path: String) -> String {
        var trimmed = Substring(path)
        while trimmed.count > 1, trimmed.hasSuffix("/") {
            trimmed.removeLast()
        }
        guard let slash = trimmed.lastIndex(of: "/") else {
            return "."
        }
        var parent = trimmed[..<slash]
        while parent.count > 1, parent.hasSuffix("/") {
            parent.removeLast()
        }
        return parent.isEmpty ? "/" : String(parent)
    }

    // POSIX fixes these values (S_IFMT, S_IFDIR, S_IFSOCK) on Linux and Darwin; Glibc's macros do not import.
    private static let fileTypeMask: mode_t = 0o170000
    private static let directoryType: mode_t = 0o040000
    private static let socketType: mode_t = 0o140000
}
