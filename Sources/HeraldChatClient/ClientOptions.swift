import Foundation
import HeraldCommandLine

/// herald-chat's command line, parsed and checked.
struct ClientOptions: Sendable {
    var user: String
    var server: URL
    var socket: String?
    var presence = true
    var json = false

    static let version = "0.1.0"

    static let spec = CommandSpec(
        name: "herald-chat",
        abstract: "Chat in a Blabber room from the terminal, telling it when you leave and come back to the desktop.",
        discussion: """
            Lines typed are sent to the room; '/countdown TEXT' sends 3, 2, 1 and TEXT a second apart; '/quit' \
            leaves. Through heraldd, the client observes session.willResignActive and session.didBecomeActive and \
            tells the room "NAME went away" and "NAME came back"; without heraldd the chat works and presence is \
            off. It reconnects with backoff when the server goes away. Exit status: 0 after /quit or the end of \
            input, 1 when the server refuses the user, 64 for a usage error, 130 on SIGINT, 143 on SIGTERM.
            """,
        options: [
            OptionSpec(long: "user", short: "u", valueName: "name", help: "Your name in the room (required)."),
            OptionSpec(
                long: "server",
                valueName: "url",
                help: "The chat server.",
                defaultDescription: "http://127.0.0.1:8080"
            ),
            OptionSpec(
                long: "socket",
                short: "s",
                valueName: "path",
                help: "heraldd's socket.",
                defaultDescription: "$HERALD_SOCKET, else $XDG_RUNTIME_DIR/herald/socket, else /tmp/herald-$UID/socket"
            ),
            OptionSpec(long: "no-presence", help: "Do not report going away and coming back."),
            OptionSpec(
                long: "json",
                help: "Print each line from the server as the JSON object it is, and notices as {\"notice\": ...}."
            ),
            OptionSpec(long: "version", help: "Show the version."),
        ]
    )

    init(_ arguments: ParsedArguments) throws(UsageError) {
        guard let user = arguments.value("user")?.trimmingCharacters(in: .whitespaces), !user.isEmpty else {
            throw UsageError(message: "Missing expected argument '--user <name>'")
        }
        guard user.count <= 64, !user.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        else {
            throw UsageError(message: "invalid user name '\(user)': at most 64 characters, no control characters")
        }
        self.user = user
        let text = arguments.value("server") ?? "http://127.0.0.1:8080"
        guard let url = URL(string: text), url.scheme == "http" || url.scheme == "https", url.host != nil else {
            throw UsageError(message: "invalid server URL '\(text)': use http://HOST:PORT")
        }
        server = url
        socket = arguments.value("socket")
        presence = !arguments.flag("no-presence")
        json = arguments.flag("json")
    }

    /// `/chat/room?NAME` in the book's form: the bare, percent-encoded name.
    var roomURL: URL {
        let name = user.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? user
        return URL(string: "chat/room?\(name)", relativeTo: serverBase)!.absoluteURL
    }

    /// `/chat/say`.
    var sayURL: URL {
        URL(string: "chat/say", relativeTo: serverBase)!.absoluteURL
    }

    private var serverBase: URL {
        server.absoluteString.hasSuffix("/") ? server : URL(string: server.absoluteString + "/")!
    }
}
