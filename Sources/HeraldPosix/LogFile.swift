internal import CHeraldShim

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A file that a log is appended to at a known offset: heraldd's state log in a file (`--state-file`) or in a
/// memfd held by systemd's descriptor store. Appends are `pwrite`s at the end the owner tracks, so nothing depends
/// on the file's own offset, and no `fsync`: the log lives on a tmpfs or in memory, where a write is as durable as
/// the session.
///
/// A class rather than a non-copyable struct: its owner swaps one log for its compacted copy, and the descriptor
/// is closed once, when the last reference goes.
public final class LogFile {
    public let descriptor: FileDescriptor
    /// Where the next append goes.
    public private(set) var length: Int

    /// Adopts an open descriptor (a memfd handed back by systemd, or a file opened by ``open(path:)``).
    public init(adopting descriptor: consuming FileDescriptor) throws(SystemError) {
        var status = stat()
        let raw = descriptor.rawValue
        _ = try completedSyscall("fstat of the state log") { fstat(raw, &status) }
        self.descriptor = descriptor
        length = Int(status.st_size)
    }

    /// Opens the file `path`, refusing a symbolic link.
    ///
    /// - Parameter create: Whether to create it (mode 0600) when it does not exist.
    /// - Throws: ``SystemError``; ENOENT when it does not exist and `create` is false.
    public static func open(path: String, create: Bool = true) throws(SystemError) -> LogFile {
        let raw = try completedSyscall("open \(path)") {
            Glibc.open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW | (create ? O_CREAT : 0), 0o600)
        }
        return try LogFile(adopting: FileDescriptor(owning: raw))
    }

    /// Creates an anonymous file in memory (`memfd_create`), named `name` for /proc and error messages.
    ///
    /// - Throws: ``SystemError``.
    public static func memory(name: String) throws(SystemError) -> LogFile {
        let raw = try completedSyscall("memfd_create \(name)") { herald_memfd_create(name) }
        return try LogFile(adopting: FileDescriptor(owning: raw))
    }

    /// The whole file, up to `limit` bytes.
    ///
    /// - Throws: ``SystemError``; EFBIG when it is longer than `limit`.
    public func readAll(limit: Int) throws(SystemError) -> [UInt8] {
        guard length <= limit else { throw SystemError(operation: "read the state log", errno: Errno(rawValue: EFBIG)) }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(length, 1), alignment: 1)
        defer { buffer.deallocate() }
        var done = 0
        let raw = descriptor.rawValue
        while done < length {
            let count = try completedSyscall("read the state log") {
                pread(raw, buffer.baseAddress! + done, length - done, off_t(done))
            }
            if count == 0 { break }
            done += count
        }
        let bytes = Array(buffer[0..<done])
        return bytes
    }

    /// Appends `bytes` at ``length``: one `pwrite`, unless the kernel takes less.
    ///
    /// - Throws: ``SystemError`` (ENOSPC when the tmpfs is full); ``length`` then stays where the last whole
    ///   write left it, and a part written past it is overwritten by the next append.
    public func append(_ bytes: UnsafeRawBufferPointer) throws(SystemError) {
        var done = 0
        let raw = descriptor.rawValue
        let start = length
        while done < bytes.count {
            done += try completedSyscall("write the state log") {
                pwrite(raw, bytes.baseAddress! + done, bytes.count - done, off_t(start + done))
            }
        }
        length += bytes.count
    }

    /// Appends `bytes` at ``length`` (see ``append(_:)-(UnsafeRawBufferPointer)``).
    public func append(_ bytes: [UInt8]) throws(SystemError) {
        let result = bytes.withUnsafeBytes { raw in Result { () throws(SystemError) in try append(raw) } }
        try result.get()
    }

    /// Cuts the file to `newLength` bytes: what follows the last good record of a damaged log goes, so records
    /// appended later are not hidden behind it.
    ///
    /// - Throws: ``SystemError``.
    public func truncate(to newLength: Int) throws(SystemError) {
        let raw = descriptor.rawValue
        _ = try completedSyscall("truncate the state log") { ftruncate(raw, off_t(newLength)) }
        length = newLength
    }

    /// Renames the file `from` to `to`, replacing it: how a compacted log takes the place of the old one.
    ///
    /// - Throws: ``SystemError``.
    public static func rename(_ from: String, to: String) throws(SystemError) {
        _ = try completedSyscall("rename \(from) to \(to)") { Glibc.rename(from, to) }
    }
}
