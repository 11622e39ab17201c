import Herald
import HeraldCommandLine

/// `herald get NAME [--json]`: prints a name's retained value.
struct GetCommand: Subcommand {
    static let spec = CommandSpec(
        name: "herald get",
        abstract: "Print the retained value of a name.",
        discussion: """
            Prints the payload as it was posted, followed by a newline if it is text that doesn't end with one; \
            with --json, prints the whole notification as 'herald observe --json' does. A name with no retained \
            value prints nothing and exits 1.
            """,
        arguments: [PositionalSpec(name: "name", help: "The notification name, e.g. session.state.")],
        options: [
            OptionSpec(long: "json", help: "Print the notification as a JSON object instead of the bare payload."),
            CommonOptions.socket,
        ]
    )

    /// The name read.
    var name: String
    /// Whether to print the whole notification as JSON.
    var json: Bool
    /// The `--socket` value.
    var socket: String?

    init(_ arguments: ParsedArguments) throws(UsageError) {
        name = arguments.positional("name")[0]
        try CommonOptions.validateName(name)
        json = arguments.flag("json")
        socket = arguments.value("socket")
    }

    func run() async throws(CommandFailure) {
        let value = try await Daemon.ask(socket: socket) { herald throws(HeraldError) in
            try await herald.retainedValue(of: name)
        }
        guard let value else {
            // Like grep finding nothing: a script tests the status, and there is nothing to print.
            throw CommandFailure(status: .failure, message: nil)
        }
        if json {
            Terminal.writeStdout(OutputFormat.line(for: value, style: .json))
        } else {
            var bytes = value.payload
            if String(validating: bytes, as: UTF8.self) != nil && bytes.last != UInt8(ascii: "\n") {
                bytes.append(UInt8(ascii: "\n"))
            }
            Terminal.writeStdout(bytes)
        }
    }
}
