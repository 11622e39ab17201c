public import HeraldCommandLine

/// What `herald-mqtt-bridge` is told on its command line.
public struct BridgeOptions: Sendable, Equatable {
    /// The broker's host: a name, resolved when connecting, or an IPv4 or IPv6 literal.
    public var host = "127.0.0.1"
    /// The broker's TCP port.
    public var port: UInt16 = 1883
    /// Herald patterns whose posts go to MQTT.
    public var exports: [String] = []
    /// Herald patterns whose MQTT messages are posted locally.
    public var imports: [String] = []
    /// 0 or 1.
    public var qos: UInt8 = 1
    /// The topic prefix: the name `a.b` is the topic `PREFIX/a/b`.
    public var prefix = "herald"
    /// This host's id; nil reads /etc/machine-id.
    public var hostID: String?
    /// The MQTT user name.
    public var username: String?
    /// A file whose first line is the MQTT password.
    public var passwordFile: String?
    /// How many exported messages wait while the broker is away; past it the oldest are dropped. It also bounds
    /// the QoS 0 messages waiting to be imported.
    public var queueLimit = 10_000
    /// Retained values this bridge may store in heraldd for other hosts; past it a retained import is posted live.
    /// A quarter of heraldd's `--max-retained` default, so that other hosts cannot take this host's store.
    public var maxImportedRetained = 2_500
    /// Bytes (names and payloads) of those values; a quarter of heraldd's `--max-retained-bytes` default.
    public var maxImportedRetainedBytes = 16 << 20
    /// MQTT Keep Alive, in seconds.
    public var keepAlive: UInt16 = 30
    /// The daemon's socket; nil follows the usual rule ($HERALD_SOCKET, ...).
    public var socketPath: String?
    /// Log each message.
    public var verbose = false

    /// Creates the defaults, with no broker and no pattern.
    public init() {}

    /// What `--version` prints.
    public static let version = "herald-mqtt-bridge 0.1.0"

    /// The command line: its options and its help.
    public static let spec = CommandSpec(
        name: "herald-mqtt-bridge",
        abstract: "Shares chosen Herald names with other hosts through an MQTT 5 broker.",
        discussion: """
            A plain Herald client on one side and an MQTT 5 client on the other: the posts matching --export \
            are published to PREFIX/a/b/c, and the messages matching --import are posted here. Loop-free: the \
            bridge never exports its own posts, subscribes with No Local, and drops what its own host sent.
            """,
        usage: "herald-mqtt-bridge --broker <url> [--export <pattern>]... [--import <pattern>]... [options]",
        options: [
            OptionSpec(
                long: "broker",
                valueName: "url",
                help: "The broker, mqtt://HOST:PORT (HOST a name, an IPv4 literal or [IPv6]; port 1883 by default)."
            ),
            OptionSpec(
                long: "export",
                valueName: "pattern",
                help: "Herald names to publish to MQTT.",
                repeatable: true
            ),
            OptionSpec(
                long: "import",
                valueName: "pattern",
                help: "Herald names to take from MQTT and post here.",
                repeatable: true
            ),
            OptionSpec(
                long: "qos",
                valueName: "qos",
                help: "The MQTT QoS of exported messages and subscriptions, 0 or 1.",
                defaultDescription: "1"
            ),
            OptionSpec(long: "prefix", valueName: "prefix", help: "The topic prefix.", defaultDescription: "herald"),
            OptionSpec(
                long: "host-id",
                valueName: "id",
                help: "This host's id: letters, digits, '-' or '_'.",
                defaultDescription: "/etc/machine-id"
            ),
            OptionSpec(long: "username", valueName: "name", help: "The MQTT user name."),
            OptionSpec(long: "password-file", valueName: "path", help: "A file whose first line is the MQTT password."),
            OptionSpec(
                long: "queue-limit",
                valueName: "count",
                help: "Exported messages held while the broker is away, and QoS 0 messages waiting to be imported.",
                defaultDescription: "10000"
            ),
            OptionSpec(
                long: "max-imported-retained",
                valueName: "count",
                help: "Retained values this bridge stores for other hosts; past it, a retained message is posted live.",
                defaultDescription: "2500, a quarter of heraldd's"
            ),
            OptionSpec(
                long: "max-imported-retained-bytes",
                valueName: "bytes",
                help: "Bytes of those values (names and payloads); past it, a retained message is posted live.",
                defaultDescription: "16777216, a quarter of heraldd's"
            ),
            OptionSpec(
                long: "keep-alive",
                valueName: "seconds",
                help: "MQTT Keep Alive, 1 to 65535.",
                defaultDescription: "30"
            ),
            OptionSpec(long: "socket", short: "s", valueName: "path", help: "The Herald daemon's socket."),
            OptionSpec(long: "verbose", help: "Log each message."),
            OptionSpec(long: "version", help: "Show the version."),
        ]
    )

    /// Parses the arguments after the program's name; nil means `--help` or `--version` was asked for.
    ///
    /// - Throws: `UsageError` for an unknown option, a missing or malformed value, or no pattern at all.
    public static func parse(_ arguments: [String]) throws(UsageError) -> BridgeOptions? {
        guard case .run(let parsed) = try spec.parse(arguments) else { return nil }
        return try BridgeOptions(parsed)
    }

    /// The options of a parsed command line.
    ///
    /// - Throws: `UsageError` for a missing or malformed value, or no pattern at all.
    public init(_ parsed: ParsedArguments) throws(UsageError) {
        guard let broker = parsed.value("broker") else { throw UsageError(message: "--broker is required") }
        (host, port) = try Self.parseBroker(broker)
        exports = parsed.values("export")
        imports = parsed.values("import")
        guard !exports.isEmpty || !imports.isEmpty else {
            throw UsageError(message: "give at least one --export or --import pattern")
        }
        switch parsed.value("qos") {
        case nil, "1": qos = 1
        case "0": qos = 0
        case let other?: throw UsageError(message: "--qos must be 0 or 1, not '\(other)'")
        }
        if let prefix = parsed.value("prefix") { self.prefix = prefix }
        if let id = parsed.value("host-id") {
            guard Self.isPlainSegment(id) else {
                throw UsageError(message: "--host-id '\(id)' must be letters, digits, '-' or '_'")
            }
            hostID = id
        }
        username = parsed.value("username")
        passwordFile = parsed.value("password-file")
        if let limit = try parsed.int("queue-limit", range: 1...100_000_000) { queueLimit = limit }
        if let count = try parsed.int("max-imported-retained", range: 0...1_000_000) { maxImportedRetained = count }
        if let bytes = try parsed.int("max-imported-retained-bytes", range: 0...(1 << 40)) {
            maxImportedRetainedBytes = bytes
        }
        if let seconds = try parsed.int("keep-alive", range: 1...Int(UInt16.max)) { keepAlive = UInt16(seconds) }
        socketPath = parsed.value("socket")
        verbose = parsed.flag("verbose")
    }

    /// `mqtt://HOST[:PORT]`, HOST a name, an IPv4 literal or `[IPv6]`.
    static func parseBroker(_ url: String) throws(UsageError) -> (String, UInt16) {
        guard url.hasPrefix("mqtt://") else {
            throw UsageError(message: "--broker must be mqtt://HOST:PORT (TLS is not supported), not '\(url)'")
        }
        var rest = Substring(url.dropFirst("mqtt://".count))
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        var host: Substring
        var port: Substring?
        if rest.hasPrefix("["), let close = rest.firstIndex(of: "]") {
            host = rest[rest.index(after: rest.startIndex)..<close]
            let after = rest[rest.index(after: close)...]
            if after.hasPrefix(":") { port = after.dropFirst() } else if !after.isEmpty { host = "" }
        } else if let colon = rest.lastIndex(of: ":") {
            host = rest[..<colon]
            port = rest[rest.index(after: colon)...]
        } else {
            host = rest
        }
        guard !host.isEmpty else { throw UsageError(message: "--broker '\(url)' has no host") }
        var number: UInt16 = 1883
        if let port {
            guard let parsed = UInt16(port), parsed > 0 else {
                throw UsageError(message: "--broker '\(url)' has an invalid port")
            }
            number = parsed
        }
        return (String(host), number)
    }

    /// Letters, digits, `-` and `_`: safe as a Herald name segment and an MQTT topic level.
    static func isPlainSegment(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= 64
            && text.utf8.allSatisfy { byte in
                (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                    || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
            }
    }
}
