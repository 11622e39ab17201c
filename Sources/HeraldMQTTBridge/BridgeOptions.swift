/// What `herald-mqtt-bridge` is told on its command line.
public struct BridgeOptions: Sendable, Equatable {
    /// A command line that cannot be run, with what is wrong.
    public struct UsageError: Error, Equatable, CustomStringConvertible {
        public var description: String

        /// Creates an error with what is wrong.
        public init(description: String) {
            self.description = description
        }
    }

    /// The broker's host: an IPv4 or IPv6 literal, or `localhost`.
    public var host = "127.0.0.1"
    public var port: UInt16 = 1883
    /// Herald patterns whose posts go to MQTT.
    public var exports: [String] = []
    /// Herald patterns whose MQTT messages are posted locally.
    public var imports: [String] = []
    /// 0 or 1.
    public var qos: UInt8 = 1
    public var prefix = "herald"
    /// This host's id; nil reads /etc/machine-id.
    public var hostID: String?
    public var username: String?
    public var passwordFile: String?
    /// How many exported messages wait while the broker is away; past it the oldest are dropped.
    public var queueLimit = 10_000
    /// MQTT Keep Alive, in seconds.
    public var keepAlive: UInt16 = 30
    /// The daemon's socket; nil follows the usual rule ($HERALD_SOCKET, ...).
    public var socketPath: String?
    public var verbose = false

    public init() {}

    /// The usage text for `--help`.
    public static let help = """
        OVERVIEW: Shares chosen Herald names with other hosts through an MQTT 5 broker.

        USAGE: herald-mqtt-bridge --broker mqtt://HOST:PORT [--export PATTERN]... [--import PATTERN]... [options]

        OPTIONS:
          --broker URL          the broker, mqtt://HOST:PORT (HOST an IP literal or localhost; port 1883 by default)
          --export PATTERN      Herald names to publish to MQTT (repeatable)
          --import PATTERN      Herald names to take from MQTT and post here (repeatable)
          --qos 0|1             the MQTT QoS of exported messages and subscriptions (default: 1)
          --prefix PREFIX       the topic prefix (default: herald)
          --host-id ID          this host's id (default: /etc/machine-id)
          --username NAME       the MQTT user name
          --password-file PATH  a file whose first line is the MQTT password
          --queue-limit N       exported messages held while the broker is away (default: 10000)
          --keep-alive SECONDS  MQTT Keep Alive (default: 30)
          --socket PATH         the Herald daemon's socket
          --verbose             log each message
          -h, --help            show this help

        """

    /// Parses the arguments after the program's name; nil means `--help` was asked for.
    ///
    /// - Throws: `UsageError` for an unknown option, a missing or malformed value, or no pattern at all.
    public static func parse(_ arguments: [String]) throws(UsageError) -> BridgeOptions? {
        var options = BridgeOptions()
        var index = 0
        func value(_ option: String) throws(UsageError) -> String {
            index += 1
            guard index < arguments.count else { throw UsageError(description: "\(option) needs a value") }
            return arguments[index]
        }
        var sawBroker = false
        while index < arguments.count {
            var argument = arguments[index]
            // --option=value is --option value.
            var inline: String?
            if argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") {
                inline = String(argument[argument.index(after: equals)...])
                argument = String(argument[..<equals])
            }
            func next() throws(UsageError) -> String {
                if let inline { return inline }
                return try value(argument)
            }
            switch argument {
            case "-h", "--help": return nil
            case "--broker":
                let url = try next()
                (options.host, options.port) = try parseBroker(url)
                sawBroker = true
            case "--export": options.exports.append(try next())
            case "--import": options.imports.append(try next())
            case "--qos":
                switch try next() {
                case "0": options.qos = 0
                case "1": options.qos = 1
                case let other: throw UsageError(description: "--qos must be 0 or 1, not '\(other)'")
                }
            case "--prefix": options.prefix = try next()
            case "--host-id":
                let id = try next()
                guard isPlainSegment(id) else {
                    throw UsageError(description: "--host-id '\(id)' must be letters, digits, '-' or '_'")
                }
                options.hostID = id
            case "--username": options.username = try next()
            case "--password-file": options.passwordFile = try next()
            case "--queue-limit":
                let text = try next()
                guard let limit = Int(text), limit >= 1 else {
                    throw UsageError(description: "--queue-limit must be a positive number, not '\(text)'")
                }
                options.queueLimit = limit
            case "--keep-alive":
                let text = try next()
                guard let seconds = UInt16(text), seconds >= 1 else {
                    throw UsageError(description: "--keep-alive must be 1 to 65535 seconds, not '\(text)'")
                }
                options.keepAlive = seconds
            case "--socket": options.socketPath = try next()
            case "--verbose": options.verbose = true
            default: throw UsageError(description: "unknown option '\(argument)'")
            }
            index += 1
        }
        guard sawBroker else { throw UsageError(description: "--broker is required") }
        guard !options.exports.isEmpty || !options.imports.isEmpty else {
            throw UsageError(description: "give at least one --export or --import pattern")
        }
        return options
    }

    /// `mqtt://HOST[:PORT]`, HOST an IPv4 literal, `[IPv6]`, or `localhost`.
    static func parseBroker(_ url: String) throws(UsageError) -> (String, UInt16) {
        guard url.hasPrefix("mqtt://") else {
            throw UsageError(description: "--broker must be mqtt://HOST:PORT (TLS is not supported), not '\(url)'")
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
        guard !host.isEmpty else { throw UsageError(description: "--broker '\(url)' has no host") }
        var number: UInt16 = 1883
        if let port {
            guard let parsed = UInt16(port), parsed > 0 else {
                throw UsageError(description: "--broker '\(url)' has an invalid port")
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
