/// An executable to start, and the arguments that come before the caller's own.
///
/// Herald's programs are reached two ways: as their own built executables (`heraldd`, `herald-chat-server`,
/// `herald-chat`), which is how the tests and a session start them, or as hidden roles of the `herald` binary,
/// which links all of them so that `swift run herald demo` on a fresh clone needs nothing else built.
public struct Program: Sendable, Equatable {
    /// The executable's path.
    public var executable: String
    /// The arguments placed before the caller's, such as the hidden role's selector.
    public var leadingArguments: [String]

    /// A program that is an executable of its own.
    ///
    /// - Parameter executable: Its path.
    public init(executable: String) {
        self.executable = executable
        self.leadingArguments = []
    }

    /// A program run as the hidden role `role` of the `herald` binary at `herald`.
    ///
    /// - Parameters:
    ///   - role: The role, one of ``Role``.
    ///   - herald: The path of the `herald` executable.
    public init(role: Role, of herald: String) {
        self.executable = herald
        self.leadingArguments = [Role.prefix + role.rawValue]
    }

    /// The hidden roles of `herald`: each is the first argument, `--role=NAME`, followed by the program's own
    /// command line.
    public enum Role: String, Sendable, CaseIterable {
        /// The daemon, as `heraldd`.
        case heraldd
        /// The chat server, as `herald-chat-server`.
        case chatServer = "herald-chat-server"
        /// The terminal chat client, as `herald-chat`.
        case chatClient = "herald-chat"

        /// What the first argument starts with.
        public static let prefix = "--role="

        /// The role that `arguments` (the command line after the program name) selects, if any.
        ///
        /// - Parameter arguments: The command line after the program name.
        /// - Returns: The role and the role's own arguments, or nil when the first argument selects none.
        public static func selected(by arguments: [String]) -> (role: Role, arguments: [String])? {
            guard let first = arguments.first, first.hasPrefix(prefix),
                let role = Role(rawValue: String(first.dropFirst(prefix.count)))
            else { return nil }
            return (role, Array(arguments.dropFirst()))
        }
    }
}
