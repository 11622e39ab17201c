public import HeraldWire

/// What a `NAME.plugin` file declares: the program to run, the names it provides, and when and how heraldd runs
/// it.
///
/// Two declarations are equal when every field is: that is how a reload tells a changed file from an unchanged one.
public struct PluginDeclaration: Hashable, Sendable {
    /// The plugin's name: the file name without `.plugin`, one name segment, so `herald.plugin.NAME` is a name.
    public var name: String
    /// The path of the file the declaration was read from.
    public var path: String
    /// `Exec=` split into words: the program (an absolute path, or a bare name to look up in `PATH`), then its
    /// arguments. Never empty.
    public var command: [String]
    /// `Description=`, or nil.
    public var description: String?
    /// `Provides=`: the patterns of the names the plugin posts.
    public var provides: [Pattern]
    /// `Activation=`.
    public var activation: Activation
    /// `Restart=`.
    public var restart: RestartPolicy
    /// `Environment=` lines in file order, each a valid variable name and its value. A later line for the same
    /// variable wins when the owner builds the environment.
    public var environment: [EnvironmentVariable]
    /// `WorkingDirectory=`, an absolute path, or nil for the daemon's own.
    public var workingDirectory: String?
    /// The absolute path of ``program`` once the owner has looked it up and ``PluginCatalog`` has checked who may
    /// write it; nil before. The owner spawns this file, so the one it checked is the one it runs.
    public var executable: String?

    /// Creates a declaration; `PluginFile` is the usual way to get one.
    public init(
        name: String,
        path: String,
        command: [String],
        description: String? = nil,
        provides: [Pattern] = [],
        activation: Activation = .manual,
        restart: RestartPolicy = .onFailure,
        environment: [EnvironmentVariable] = [],
        workingDirectory: String? = nil,
        executable: String? = nil
    ) {
        precondition(!command.isEmpty, "a plugin's command has at least the program")
        self.name = name
        self.path = path
        self.command = command
        self.description = description
        self.provides = provides
        self.activation = activation
        self.restart = restart
        self.environment = environment
        self.workingDirectory = workingDirectory
        self.executable = executable
    }

    /// The program to run, as written in `Exec=`: an absolute path, or a name the owner looks up in `PATH`.
    public var program: String { command[0] }

    /// The retained name under which the daemon posts this plugin's status.
    public var statusName: String { PluginDeclaration.statusName(of: name) }

    /// The retained name under which the daemon posts the status of the plugin called `name`.
    public static func statusName(of name: String) -> String { "herald.plugin.\(name)" }
}

/// When heraldd starts a plugin (`Activation=`).
public enum Activation: String, Hashable, Sendable, CaseIterable {
    /// When the daemon starts (or when a reload adds the file to a running daemon).
    case start
    /// The first time a connection subscribes to a pattern that can match a name the plugin provides.
    case subscribe
    /// Only when asked: `herald plugins start NAME`.
    case manual
}

/// Whether heraldd starts a plugin again after it exits (`Restart=`).
public enum RestartPolicy: String, Hashable, Sendable, CaseIterable {
    /// After a failure (a non-zero exit, a signal, or a failed spawn), with backoff; a clean exit stays stopped.
    case onFailure = "on-failure"
    /// After any exit, with the same backoff; only failures count towards `failed`.
    case always
    /// Never: the plugin stays stopped (or failed) once it exits.
    case no
}

/// One `Environment=KEY=VALUE` line.
public struct EnvironmentVariable: Hashable, Sendable {
    /// The variable's name: a letter or `_`, then letters, digits and `_`.
    public var key: String
    /// The value, taken as written after the first `=`.
    public var value: String

    /// Creates a variable; `key` is assumed valid (see ``isValidKey(_:)``).
    public init(key: String, value: String) {
        self.key = key
        self.value = value
    }

    /// Whether `key` is a portable environment variable name (POSIX: letters, digits and `_`, not starting with a
    /// digit).
    public static func isValidKey(_ key: String) -> Bool {
        guard let first = key.utf8.first, !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) else {
            return false
        }
        return key.utf8.allSatisfy { byte in
            byte == UInt8(ascii: "_") || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
        }
    }

    /// The variables heraldd sets for every plugin, which `Environment=` may not set.
    public static let reservedKeys: Set<String> = ["HERALD_SOCKET", "HERALD_PLUGIN"]

    /// `KEY=VALUE`, as `envp` wants it.
    public var assignment: String { "\(key)=\(value)" }
}
