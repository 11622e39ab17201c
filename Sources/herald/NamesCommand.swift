import Herald
import HeraldArguments

/// `herald names [--json]`: the names heraldd knows, for shell completion and for people.
struct NamesCommand: Subcommand {
    static let spec = CommandSpec(
        name: "herald names",
        abstract: "List the names that have a retained value or a subscriber, one per line.",
        discussion: "Shell completions use this to offer names. Patterns with wildcards are not names and are "
            + "not listed.",
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
        let names = try await Daemon.ask(socket: socket) { herald throws(HeraldError) in try await herald.names() }
        let text: String
        if json {
            text = "[" + names.map(OutputFormat.quoted).joined(separator: ",") + "]\n"
        } else {
            text = names.map { $0 + "\n" }.joined()
        }
        _ = StandardOutput.write(text)
    }
}
