import Herald
import HeraldCommandLine

/// `herald names [--json]`: the names heraldd knows, for shell completion and for people.
struct NamesCommand: Subcommand {
    static let spec = CommandSpec(
        name: "herald names",
        abstract: "List the names that have a retained value or a subscriber, one per line.",
        discussion: "Shell completions use this to offer names. The patterns that a plugin provides are listed "
            + "too, even before any post, each followed by a tab and 'provided by plugin NAME'; --json lists names "
            + "only.",
        options: [
            OptionSpec(long: "json", help: "Print a JSON array instead of lines."),
            CommonOptions.socket,
        ]
    )

    var json: Bool
    var socket: String?

    init(_ arguments: ParsedArguments) throws(UsageError) {
        json = arguments.flag("json")
        socket = arguments.value("socket")
    }

    func run() async throws(CommandFailure) {
        let (names, plugins) = try await Daemon.ask(socket: socket) { herald throws(HeraldError) in
            (try await herald.names(), try await PluginsCommand.states(from: herald))
        }
        let text: String
        if json {
            text = "[" + names.map(OutputFormat.quoted).joined(separator: ",") + "]\n"
        } else {
            var provided: [String] = []
            for (plugin, state) in plugins {
                guard case .array(let patterns) = state["provides"], state["reason"] == nil || state["reason"] == .null
                else { continue }
                provided += patterns.compactMap(\.stringValue).map { "\($0)\tprovided by plugin \(plugin)\n" }
            }
            text = names.map { $0 + "\n" }.joined() + provided.joined()
        }
        _ = Terminal.writeStdout(text)
    }
}
