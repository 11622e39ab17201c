#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The few file-system reads heraldd needs for its plugin folders: list a directory, look at a file's owner and mode,
/// and read a small file whole.
public enum FileSystem {
    /// What `stat` says about a file, as far as heraldd cares.
    public struct Status: Sendable, Equatable {
        /// The owner's uid.
        public var ownerUID: UInt32
        /// The permission bits (`st_mode & 0o7777`).
        public var permissions: UInt32
        /// Whether it is a regular file.
        public var isRegularFile: Bool
        /// Whether it is a directory.
        public var isDirectory: Bool
        /// What kind of file it is, in words: "a regular file", "a directory", "a FIFO", "a socket", ….
        public var kind: String = "a regular file"
        /// Whether anyone may execute it (any of the three execute bits).
        public var isExecutable: Bool { permissions & 0o111 != 0 }
        /// Whether its group or others may write it.
        public var isWritableByOthers: Bool { permissions & 0o022 != 0 }
    }

    /// `stat` of `path`, following symbolic links.
    ///
    /// - Throws: ``SystemError``, e.g. ENOENT.
    public static func status(of path: String) throws(SystemError) -> Status {
        var info = stat()
        _ = try completedSyscall("stat \(path)") { stat(path, &info) }
        let kind = UInt32(info.st_mode) & UInt32(S_IFMT)
        return Status(
            ownerUID: UInt32(info.st_uid),
            permissions: UInt32(info.st_mode) & 0o7777,
            isRegularFile: kind == UInt32(S_IFREG),
            isDirectory: kind == UInt32(S_IFDIR),
            kind: describe(kind: kind)
        )
    }

    /// Whether `path` is a symbolic link (`lstat`), whatever it leads to.
    public static func isSymbolicLink(_ path: String) -> Bool {
        var info = stat()
        guard lstat(path, &info) == 0 else { return false }
        return UInt32(info.st_mode) & UInt32(S_IFMT) == UInt32(S_IFLNK)
    }

    private static func describe(kind: UInt32) -> String {
        switch kind {
        case UInt32(S_IFREG): "a regular file"
        case UInt32(S_IFDIR): "a directory"
        case UInt32(S_IFIFO): "a FIFO"
        case UInt32(S_IFSOCK): "a socket"
        case UInt32(S_IFCHR): "a character device"
        case UInt32(S_IFBLK): "a block device"
        default: "a special file"
        }
    }

    /// The names in the directory `path` as the directory holds them (which need not be UTF-8), without `.` and
    /// `..`, sorted bytewise.
    ///
    /// - Throws: ``SystemError``, e.g. ENOENT for a folder that does not exist.
    public static func entryBytes(of path: String) throws(SystemError) -> [[UInt8]] {
        guard let directory = opendir(path) else {
            throw SystemError(operation: "open the directory \(path)", errno: .current)
        }
        defer { closedir(directory) }
        var names: [[UInt8]] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { bytes in Array(bytes.prefix { $0 != 0 }) }
            if name != [UInt8(ascii: ".")] && name != [UInt8(ascii: "."), UInt8(ascii: ".")] { names.append(name) }
        }
        return names.sorted { $0.lexicographicallyPrecedes($1) }
    }

    /// The names in the directory `path`, without `.` and `..`, sorted bytewise.
    ///
    /// - Throws: ``SystemError``, e.g. ENOENT for a folder that does not exist.
    public static func entries(of path: String) throws(SystemError) -> [String] {
        guard let directory = opendir(path) else {
            throw SystemError(operation: "open the directory \(path)", errno: .current)
        }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { bytes in
                String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    }

    /// Appends `text` to the file `path`, creating it (mode 0600) when it does not exist.
    ///
    /// - Throws: ``SystemError``, e.g. ENOENT when its directory is gone.
    public static func append(_ text: String, to path: String) throws(SystemError) {
        let raw = try completedSyscall("open \(path)") {
            open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        }
        let file = FileDescriptor(owning: raw)
        var failure: SystemError?
        Array(text.utf8).withUnsafeBytes { buffer in
            do {
                try file.writeAll(buffer)
            } catch {
                failure = error as? SystemError
            }
        }
        if let failure { throw failure }
    }

    /// Replaces the file `path` with `text` at once (mode 0600): written beside it, then renamed over it, so a reader
    /// sees the old contents or the new, never a part.
    ///
    /// - Throws: ``SystemError``.
    public static func replace(_ path: String, with text: String) throws(SystemError) {
        let temporary = path + ".new"
        remove(temporary)
        try append(text, to: temporary)
        _ = try completedSyscall("rename \(temporary) to \(path)") { rename(temporary, path) }
    }

    /// Removes the file `path`; one that is not there is not an error.
    public static func remove(_ path: String) {
        _ = unlink(path)
    }

    /// The first line of the file `path`, up to `limit` bytes, without its newline; nil when it cannot be read.
    public static func firstLine(of path: String, limit: Int = 256) -> String? {
        let raw = open(path, O_RDONLY | O_CLOEXEC)
        guard raw >= 0 else { return nil }
        // Closed when it goes out of scope.
        let file = FileDescriptor(owning: raw)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: limit, alignment: 1)
        defer { buffer.deallocate() }
        guard case .processed(let count)? = try? file.read(into: buffer) else { return nil }
        let bytes = buffer[0..<count].prefix { $0 != UInt8(ascii: "\n") }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The whole contents of the file `path`, which must be at most `limit` bytes.
    ///
    /// - Throws: ``SystemError``; EFBIG when the file is longer than `limit`.
    public static func contents(of path: String, limit: Int) throws(SystemError) -> [UInt8] {
        let raw = try completedSyscall("open \(path)") { open(path, O_RDONLY | O_CLOEXEC) }
        let file = FileDescriptor(owning: raw)
        let bytes = try readAll(file, path: path, limit: limit)
        file.close()
        return bytes
    }

    private static func readAll(
        _ file: borrowing FileDescriptor,
        path: String,
        limit: Int
    ) throws(SystemError) -> [UInt8] {
        var bytes: [UInt8] = []
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 1)
        defer { buffer.deallocate() }
        while true {
            let count = try file.read(into: buffer).completed("read \(path)")
            if count == 0 { return bytes }
            bytes.append(contentsOf: buffer[0..<count])
            if bytes.count > limit {
                throw SystemError(operation: "read \(path) (over \(limit) bytes)", errno: Errno(rawValue: EFBIG))
            }
        }
    }

    /// The absolute path of the executable `name` in the colon-separated `searchPath`, as `execvp` would find it.
    ///
    /// - Returns: The path, or nil when no folder of `searchPath` holds an executable regular file of that name.
    public static func findExecutable(_ name: String, in searchPath: String) -> String? {
        for directory in searchPath.split(separator: ":") where directory.hasPrefix("/") {
            let candidate = directory + "/" + name
            if let status = try? status(of: candidate), status.isRegularFile, access(candidate, X_OK) == 0 {
                return candidate
            }
        }
        return nil
    }
}
