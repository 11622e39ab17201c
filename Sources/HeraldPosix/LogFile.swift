internal import CHeraldShim
import Synchronization

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
/// After ``mapAppends(terminator:)`` an append is a copy into a shared mapping of the file instead (no syscall):
/// its space is reserved ahead with fallocate, in chunks that double up to ``growthLimit``, so a full tmpfs fails
/// the reservation (and the log goes back to `pwrite`, ``takeMappingFailure()`` says why) rather than a store
/// raising SIGBUS. The file is then longer than the log: each append ends with the terminator, which a reader takes
/// for the log's end, and zeros follow it. A store into a shared mapping of a memfd or of a tmpfs file is in the
/// file's pages at once, so it survives SIGKILL as a `pwrite` does.
///
/// A class rather than a non-copyable struct: its owner swaps one log for its compacted copy, and the descriptor
/// is closed once, when the last reference goes.
public final class LogFile {
    public let descriptor: FileDescriptor
    /// Where the next append goes.
    public private(set) var length: Int
    /// The bytes reserved and mapped for appends (the file's size while mapped); 0 while appends are `pwrite`s.
    public private(set) var capacity = 0
    /// The most the reservation grows to by doubling (rounded down to a page); past it, only what an append needs,
    /// a page at a time.
    public var growthLimit = LogFile.chunk
    /// What ends the log in the mapped file; nil while appends are `pwrite`s.
    private var terminator: [UInt8]?
    private var mapping: UnsafeMutableRawBufferPointer?
    private var mappingFailure: SystemError?
    /// Whether a store into the mapping faulted: the file was cut short under it, by another process (a mapped
    /// file's size changes only with this process's own fallocate and ftruncate otherwise), so the log before
    /// ``length`` may be gone from the file; only a rewrite from the owner's state makes the file whole again.
    public private(set) var cutShort = false

    /// The first reservation, unless ``growthLimit`` is less.
    public static let chunk = 64 << 10

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

    deinit {
        if let mapping { FileDescriptor.unmap(mapping) }
    }

    /// From now on, appends are copies into a shared mapping of the file, each followed by `terminator`, which a
    /// reader must take for the end of the log (the reserved space after it holds zeros). Meant for a log this
    /// process creates and alone appends to.
    ///
    /// - Parameter terminator: bytes no record starts with.
    public func mapAppends(terminator: [UInt8]) {
        precondition(!terminator.isEmpty && self.terminator == nil, "mapAppends(terminator:) once, with bytes")
        self.terminator = terminator
    }

    /// Why appends went back from the mapping to `pwrite`, once: for the owner's log line.
    public func takeMappingFailure() -> SystemError? {
        defer { mappingFailure = nil }
        return mappingFailure
    }

    /// Appends `bytes` at ``length``: a copy into the mapping (see ``mapAppends(terminator:)``), or one `pwrite`,
    /// unless the kernel takes less.
    ///
    /// - Throws: ``SystemError`` (ENOSPC when the tmpfs is full); ``length`` then stays where the last whole
    ///   write left it, and a part written past it is overwritten by the next append.
    public func append(_ bytes: UnsafeRawBufferPointer) throws(SystemError) {
        if let terminator, !bytes.isEmpty {
            let end = length + bytes.count
            if end + terminator.count > capacity {
                do throws(SystemError) {
                    try reserve(end + terminator.count)
                } catch {
                    stopMapping(error)
                    try write(bytes)
                    return
                }
            }
            let base = mapping!.baseAddress!
            // The new terminator first, past the records, then the records over the old one: a kill between the
            // two leaves the old terminator whole, and one during the copy leaves a record cut short, which the
            // reader's checksum rejects. Each copy is guarded: a file another process cut short under the mapping
            // faults (SIGBUS), and the append goes on with pwrite instead of the daemon dying.
            let stored = terminator.withUnsafeBytes { herald_copy_to_mapping(base + end, $0.baseAddress!, $0.count) }
            atomicMemoryFence(ordering: .releasing)
            guard stored == 0, herald_copy_to_mapping(base + length, bytes.baseAddress!, bytes.count) == 0 else {
                stopMapping(SystemError(operation: "store into the mapped log, cut short", errno: .current))
                cutShort = true
                try write(bytes)
                return
            }
            length = end
            return
        }
        try write(bytes)
    }

    /// Reserves (fallocate) and maps at least `needed` bytes: double the reservation, at least ``chunk``, at most
    /// ``growthLimit`` unless `needed` is more. The old mapping goes once the new one is made.
    private func reserve(_ needed: Int) throws(SystemError) {
        let page = 4096
        let least = (needed + page - 1) / page * page
        let size = max(least, min(max(2 * capacity, Self.chunk), growthLimit / page * page))
        try descriptor.allocate(offset: capacity, length: size - capacity)
        let region = try descriptor.mapShared(length: size)
        if let mapping { FileDescriptor.unmap(mapping) }
        mapping = region
        capacity = size
    }

    /// Goes back to `pwrite`s: the mapping goes, and the file is cut back to the log, so that it ends where the
    /// next `pwrite` ends it (at worst, when the cut fails, a reader finds zeros after the log and reports them).
    private func stopMapping(_ error: SystemError) {
        if let mapping { FileDescriptor.unmap(mapping) }
        mapping = nil
        capacity = 0
        terminator = nil
        mappingFailure = error
        try? truncate(to: length)
    }

    /// Appends `bytes` at ``length`` with `pwrite`.
    private func write(_ bytes: UnsafeRawBufferPointer) throws(SystemError) {
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
