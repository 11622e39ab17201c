import HeraldCommandLine
import HeraldPosix

/// herald-chat-server's command line, parsed and checked.
struct ServerOptions {
    var host = "127.0.0.1"
    var port: UInt16 = 8080
    var bot = false
    var history = 100
    /// Listener streams at once; nil for the default, which depends on the descriptor limit.
    var maxListeners: Int?
    /// Connections that are not streams at once; nil for the default, which depends on the descriptor limit.
    var maxRequests: Int?
    /// How long a request may take to arrive once started, and a new connection to send one.
    var requestTimeout: Duration = .seconds(10)
    var logLevel = Logger.Level.notice

    static let version = "0.1.0"

    static let spec = CommandSpec(
        name: "herald-chat-server",
        abstract: "Serve the Blabber chat protocol: GET /chat/room?NAME streams the room, POST /chat/say posts.",
        discussion: """
            A Blabber-compatible chat server (the protocol of the book "Modern Concurrency in Swift"), without the \
            book server's defects: messages are pushed to listeners at once, bad requests get a 400 with a reason, \
            history and per-listener memory are bounded, and "NAME went away" / "NAME came back" are shown once \
            per user however many of the user's clients report them, and only when posted from the address of one \
            of that user's room streams. It raises its soft descriptor limit to the hard one; streams and other \
            connections have separate limits, so neither can lock the other out. Once listening it logs \
            "listening on http://HOST:PORT" on stderr. SIGINT or SIGTERM stops it (exit 0).
            """,
        options: [
            OptionSpec(
                long: "host",
                valueName: "address",
                help: "The address to listen on.",
                defaultDescription: "127.0.0.1"
            ),
            OptionSpec(
                long: "port",
                short: "p",
                valueName: "port",
                help: "The port to listen on; 0 picks a free one.",
                defaultDescription: "8080"
            ),
            OptionSpec(long: "bot", help: "Add Bottley, who answers 5 s after the last message of a burst."),
            OptionSpec(
                long: "history",
                valueName: "count",
                help: "Messages kept in the room's history (the last 3 are replayed to joiners).",
                defaultDescription: "100"
            ),
            OptionSpec(
                long: "max-listeners",
                valueName: "count",
                help: """
                    Room streams (GET /chat/room) at once; one more is answered 503. They do not take request slots.
                    """,
                defaultDescription: "1024, or a quarter of the descriptor limit if lower"
            ),
            OptionSpec(
                long: "max-requests",
                valueName: "count",
                help: """
                    Other connections at once (reading a request, idle, closing); one more closes the one that has \
                    waited longest: closing, then idle, then the oldest unfinished request.
                    """,
                defaultDescription: "4096, or half of the descriptor limit if lower"
            ),
            OptionSpec(
                long: "request-timeout",
                valueName: "seconds",
                help: """
                    How long a request may take to arrive once it has started, and a new connection to send its \
                    first one; then the connection is closed.
                    """,
                defaultDescription: "10"
            ),
            OptionSpec(
                long: "log-level",
                valueName: "level",
                help: "debug, info, notice, warning or error.",
                defaultDescription: "notice"
            ),
            OptionSpec(long: "version", help: "Show the version."),
        ]
    )

    init(_ arguments: ParsedArguments) throws(UsageError) {
        if let host = arguments.value("host") {
            self.host = host
        }
        if let port = try arguments.int("port", range: 0...65_535) {
            self.port = UInt16(port)
        }
        bot = arguments.flag("bot")
        if let history = try arguments.int("history", range: 3...1_000_000) {
            self.history = history
        }
        maxListeners = try arguments.int("max-listeners", range: 1...1_000_000)
        maxRequests = try arguments.int("max-requests", range: 1...1_000_000)
        if let seconds = try arguments.double("request-timeout", range: 0.1...86_400) {
            requestTimeout = .milliseconds(Int64((seconds * 1_000).rounded()))
        }
        if let text = arguments.value("log-level") {
            guard let level = Logger.Level(parsing: text) else {
                throw UsageError(message: "invalid log level '\(text)': use debug, info, notice, warning or error")
            }
            logLevel = level
        }
    }
}
