#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A fresh directory under /tmp with a short name (socket paths must fit in 108 bytes), removed with everything in
/// it when the test ends.
struct TemporaryDirectory: ~Copyable {
    let path: String

    init() {
        var template = Array("/tmp/hx-XXXXXX".utf8CString)
        let result = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        precondition(result != nil, "mkdtemp failed with errno \(errno)")
        path = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// `name` inside this directory.
    func appending(_ name: String) -> String {
        "\(path)/\(name)"
    }

    deinit {
        Self.removeTree(path)
    }

    private static func removeTree(_ path: String) {
        var status = stat()
        guard lstat(path, &status) == 0 else {
            return
        }
        if status.st_mode & 0o170000 == 0o040000 {
            // Make sure we may list and empty it, even if a test tightened its mode.
            chmod(path, 0o700)
            if let directory = opendir(path) {
                var names: [String] = []
                while let entry = readdir(directory) {
                    let name = withUnsafeBytes(of: entry.pointee.d_name) { bytes in
                        String(cString: bytes.bindMemory(to: CChar.self).baseAddress!)
                    }
                    if name != "." && name != ".." {
                        names.append(name)
                    }
                }
                closedir(directory)
                for name in names {
                    removeTree("\(path)/\(name)")
                }
            }
            rmdir(path)
        } else {
            unlink(path)
        }
    }
}
