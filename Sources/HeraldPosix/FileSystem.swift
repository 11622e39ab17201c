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
            isDirectory: kind == UInt32(S_IFDIR)
        )
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
