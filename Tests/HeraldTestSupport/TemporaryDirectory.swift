import Foundation

/// A fresh 0700 directory under /tmp with a short path (a socket path must fit in 108 bytes), removed with everything
/// in it when the value is released: the one temporary directory of every test target.
public final class TemporaryDirectory: Sendable {
    /// The directory's path, e.g. `/tmp/hd-Ab12Cd`.
    public let path: String

    /// Creates the directory.
    ///
    /// - Parameter prefix: the start of its name, to tell which tests left a directory behind after a crash.
    public init(prefix: String = "hd") {
        var template = Array("/tmp/\(prefix)-XXXXXX".utf8CString)
        let created = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        precondition(created != nil, "mkdtemp failed: errno \(errno)")
        path = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// A path inside the directory.
    public func file(_ name: String) -> String {
        path + "/" + name
    }

    deinit {
        Self.removeTree(path)
    }

    /// Removes `path` and, for a directory, everything below it, without following links. A test may have tightened
    /// a directory's mode (SocketDirectoryTests does), which FileManager would give up on, so each directory is
    /// opened up first.
    private static func removeTree(_ path: String) {
        var status = stat()
        guard lstat(path, &status) == 0 else { return }
        guard status.st_mode & S_IFMT == S_IFDIR else {
            unlink(path)
            return
        }
        chmod(path, 0o700)
        for name in (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? [] {
            removeTree(path + "/" + name)
        }
        rmdir(path)
    }
}
