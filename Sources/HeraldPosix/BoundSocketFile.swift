#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The file a listening Unix socket was bound to, remembered so that exactly that file is removed at the end.
///
/// A path names whatever is there when it is resolved. Were the socket's directory renamed away and replaced by a
/// symbolic link meanwhile, unlinking the path would remove a file of the same name in the link's target. So this
/// holds a descriptor of the directory the socket was created in (opened without following a link) and the socket's
/// device and inode numbers, and removes the entry relative to that directory, only while it is still that inode.
public struct BoundSocketFile: ~Copyable, Sendable {
    /// The path the socket was bound to, for messages.
    public let path: String
    private let directory: FileDescriptor
    private let name: String
    private let device: UInt64
    private let inode: UInt64

    /// Records the socket that was just bound at `path`.
    ///
    /// Call it right after binding, while the directory is known to be the one checked by
    /// ``SocketDirectory/prepare(forSocketAt:)``.
    ///
    /// - Parameter path: the socket's path, as given to ``UnixSocket/listen(path:backlog:)``.
    /// - Throws: ``SystemError``: ELOOP or ENOTDIR when the directory is now a symbolic link or not a directory,
    ///   ENOENT when the socket is gone, EEXIST when the entry is not a socket.
    public init(boundAt path: String) throws(SystemError) {
        let directoryPath = SocketDirectory.parent(of: path)
        let name = String(path.split(separator: "/", omittingEmptySubsequences: true).last ?? Substring(path))
        let directory = FileDescriptor(
            owning: try completedSyscall("open the socket directory \(directoryPath)") {
                open(directoryPath, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            }
        )
        var status = stat()
        _ = try completedSyscall("inspect \(path)") {
            fstatat(directory.rawValue, name, &status, AT_SYMLINK_NOFOLLOW)
        }
        guard status.st_mode & Self.fileTypeMask == Self.socketType else {
            throw SystemError(operation: "record \(path), which is not a socket", errno: .alreadyExists)
        }
        self.path = path
        self.directory = directory
        self.name = name
        self.device = UInt64(status.st_dev)
        self.inode = UInt64(status.st_ino)
    }

    /// Removes the socket file, if its directory entry still names the socket that was bound.
    ///
    /// The entry is looked up in the directory the socket was created in, wherever that directory is now, and not
    /// through the path: a link or a directory put in the path's place is never followed.
    ///
    /// - Returns: true when the file was removed; false when the entry is gone or is now another file, which is then
    ///   left alone.
    /// - Throws: ``SystemError`` when the entry cannot be inspected or removed.
    public consuming func remove() throws(SystemError) -> Bool {
        var status = stat()
        do throws(SystemError) {
            _ = try completedSyscall("inspect \(path)") {
                fstatat(directory.rawValue, name, &status, AT_SYMLINK_NOFOLLOW)
            }
        } catch {
            if error.errno == .noEntry { return false }
            throw error
        }
        guard UInt64(status.st_dev) == device, UInt64(status.st_ino) == inode,
            status.st_mode & Self.fileTypeMask == Self.socketType
        else {
            return false
        }
        do throws(SystemError) {
            _ = try completedSyscall("remove \(path)") { unlinkat(directory.rawValue, name, 0) }
        } catch {
            // Removed by someone else between the check and the unlink: the goal is reached.
            if error.errno == .noEntry { return false }
            throw error
        }
        return true
    }

    // POSIX fixes these values (S_IFMT, S_IFSOCK) on Linux and Darwin; Glibc's macros do not import.
    private static let fileTypeMask: mode_t = 0o170000
    private static let socketType: mode_t = 0o140000
}
