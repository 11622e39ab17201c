/// Why ``SocketDirectory/prepare(forSocketAt:)`` will not put the socket in a directory.
///
/// The description says what is wrong and how to fix it, e.g.
/// "refusing to use /tmp/herald-1000: its mode is 0755, expected 0700 (chmod 700 /tmp/herald-1000)".
public struct SocketDirectoryError: Error, Sendable, CustomStringConvertible {
    /// What is wrong with the directory.
    public enum Code: Hashable, Sendable {
        /// Something other than a directory (a file, a symbolic link) is at the path.
        case notADirectory
        /// The directory belongs to another user, who could replace the socket.
        case wrongOwner(owner: UInt32, expected: UInt32)
        /// Others have access to the directory; `mode` holds its permission bits.
        case wrongMode(mode: UInt32)
        /// The directory, or one of its missing parents, could not be created.
        case cannotCreate(Errno)
        /// The directory could not be inspected with lstat.
        case cannotInspect(Errno)
    }

    /// The directory in question (for ``Code-swift.enum/cannotCreate(_:)``, the component that could not be made).
    public let directory: String
    /// What is wrong.
    public let code: Code

    /// Creates an error about `directory`.
    public init(directory: String, code: Code) {
        self.directory = directory
        self.code = code
    }

    /// A sentence saying what is wrong with the directory and how to fix it.
    public var description: String {
        switch code {
        case .notADirectory:
            return "refusing to use \(directory): it is not a directory (move it away or choose another socket path)"
        case .wrongOwner(let owner, let expected):
            return "refusing to use \(directory): it is owned by uid \(owner), not by uid \(expected) "
                + "(remove it or choose another socket path)"
        case .wrongMode(let mode):
            return "refusing to use \(directory): its mode is \(Self.octal(mode)), expected 0700 "
                + "(chmod 700 \(directory))"
        case .cannotCreate(let errno):
            return "cannot create \(directory): \(errno)"
        case .cannotInspect(let errno):
            return "cannot inspect \(directory): \(errno)"
        }
    }

    private static func octal(_ mode: UInt32) -> String {
        let digits = String(mode, radix: 8)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }
}
