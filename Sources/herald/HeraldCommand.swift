import HeraldCommandLine

/// The `herald` command itself: its help, its version, and which subcommand a command line asks for.
enum HeraldCommand {
    /// What `herald --version` prints.
    static let version = "herald 0.1.0"

    /// The subcommands, in the order help lists them.
    static let subcommands: [any Subcommand.Type] = [
        PostCommand.self,
        ObserveCommand.self,
        WaitCommand.self,
        GetCommand.self,
        StatusCommand.self,
        MonitorCommand.self,
        NamesCommand.self,
        PluginsCommand.self,
        DashboardCommand.self,
        DemoCommand.self,
    ]

    /// The top-level spec: no arguments of its own, `--version`, and the subcommands.
    static let spec = CommandSpec(
        name: "herald",
        abstract: "Post, observe and read notifications shared by every process of a desktop session.",
        discussion: """
            herald talks to heraldd, the session's notification daemon, over its socket: --socket, else \
            $HERALD_SOCKET, else $XDG_RUNTIME_DIR/herald/socket, else /tmp/herald-$UID/socket.

            Exit status: 0 success; 1 failure (get with no value); 64 usage error; 69 heraldd not reachable or \
            gone; 124 timed out; 130 interrupted by SIGINT, 143 by SIGTERM.
            """,
        options: [OptionSpec(long: "version", help: "Show the version.")],
        subcommands: subcommands.map { $0.spec }
    )

    /// Works out what a command line asks for, without running anything.
    ///
    /// The first word picks the subcommand; the rest is parsed with that subcommand's spec. `herald help` and
    /// `herald help SUBCOMMAND` show help as swift-argument-parser's `help` does, and `herald` alone shows the
    /// top-level help.
    ///
    /// - Parameter arguments: The words after the executable's name.
    static func invocation(for arguments: [String]) -> Invocation<any Subcommand> {
        guard let first = arguments.first else {
            return .show(spec.helpText)
        }
        if first == "help" {
            guard let topic = arguments.dropFirst().first else {
                return .show(spec.helpText)
            }
            guard let command = subcommand(named: topic) else {
                return .usageError(spec.errorText(UsageError(message: "Unknown subcommand '\(topic)'")))
            }
            return .show(command.spec.helpText)
        }
        guard let command = subcommand(named: first) else {
            // Not a subcommand: `--help`, `--version`, or an error worded by the top-level spec.
            do throws(UsageError) {
                switch try spec.parse(arguments) {
                case .help: return .show(spec.helpText)
                case .version: return .show(version + "\n")
                case .run: return .show(spec.helpText)
                }
            } catch {
                return .usageError(spec.errorText(error))
            }
        }

        return command.spec.invocation(Array(arguments.dropFirst()), version: version) {
            parsed throws(UsageError) -> any Subcommand in try command.init(parsed)
        }
    }

    private static func subcommand(named name: String) -> (any Subcommand.Type)? {
        subcommands.first { $0.spec.name == "herald \(name)" }
    }
}
