public import HeraldCommandLine

/// What `herald-dbus-bridge` is told on its command line.
public struct DBusBridgeOptions: Sendable, Equatable {
    /// The daemon's socket; nil follows the usual rule ($HERALD_SOCKET, ...).
    public var socketPath: String?
    /// The logind session id whose lock and idle state is followed; nil reads `XDG_SESSION_ID`.
    public var sessionID: String?
    /// The login name in `session.willResignActive` and `session.didBecomeActive`; nil reads `USER`.
    public var user: String?
    /// How long a logind `Lock` request waits for a locker's answer before it is forgotten.
    public var lockTimeout: Duration = .seconds(5)
    /// Log each post.
    public var verbose = false

    /// The defaults.
    public init() {}

    /// What `--version` prints.
    public static let version = "herald-dbus-bridge 0.1.0"

    /// The command line: its options and its help.
    public static let spec = CommandSpec(
        name: "herald-dbus-bridge",
        abstract: "Brings the desktop session's state into Herald, and Herald's notify.desktop to the desktop.",
        discussion: """
            One process for both D-Bus buses, driven by signals alone: the session's lock (logind's LockedHint, \
            the screen savers, logind's Lock requests), suspend and resume, idle, the battery (UPower), the \
            network (NetworkManager) and the MPRIS players become retained Herald names (Protocols/names.md), \
            each read in full at start and after every resume. A post to notify.desktop shows a desktop \
            notification; its actions and its closing come back as notify.desktop.action and \
            notify.desktop.closed.
            """,
        usage: "herald-dbus-bridge [options]",
        options: [
            OptionSpec(
                long: "session-id",
                valueName: "id",
                help: "The logind session to follow.",
                defaultDescription: "$XDG_SESSION_ID"
            ),
            OptionSpec(
                long: "user",
                valueName: "name",
                help: "The user named in session.* posts.",
                defaultDescription: "$USER"
            ),
            OptionSpec(
                long: "lock-timeout",
                valueName: "seconds",
                help: "How long a logind Lock request waits for the locker's answer before it is forgotten.",
                defaultDescription: "5"
            ),
            OptionSpec(long: "socket", short: "s", valueName: "path", help: "The Herald daemon's socket."),
            OptionSpec(long: "verbose", help: "Log each post."),
            OptionSpec(long: "version", help: "Show the version."),
        ]
    )

    /// Parses the arguments after the program's name; nil means `--help` or `--version` was asked for.
    ///
    /// - Throws: `UsageError` for an unknown option or a malformed value.
    public static func parse(_ arguments: [String]) throws(UsageError) -> DBusBridgeOptions? {
        guard case .run(let parsed) = try spec.parse(arguments) else { return nil }
        return try DBusBridgeOptions(parsed)
    }

    /// The options of a parsed command line.
    ///
    /// - Throws: `UsageError` for a malformed value.
    public init(_ parsed: ParsedArguments) throws(UsageError) {
        socketPath = parsed.value("socket")
        sessionID = parsed.value("session-id")
        user = parsed.value("user")
        if let seconds = try parsed.double("lock-timeout", range: 0.01...3600) {
            lockTimeout = .milliseconds(Int64(seconds * 1000))
        }
        verbose = parsed.flag("verbose")
    }
}
