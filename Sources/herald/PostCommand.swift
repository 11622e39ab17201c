import Herald
import HeraldCommandLine

/// `herald post NAME [KEY=VALUE ...] [--json JSON] [--retain]`: posts one notification and waits for the daemon to
/// accept it.
struct PostCommand: Subcommand {
    static let spec = CommandSpec(
        name: "herald post",
        abstract: "Post a notification to every observer of its name.",
        discussion: """
            The payload is a JSON object: from KEY=VALUE pairs (every value a string), or given whole with --json, \
            or {} when there is neither. With --retain the payload also becomes the name's retained value, which \
            'herald get' reads and new observers receive first; --retain with neither pairs nor --json clears it. \
            herald exits 0 once the daemon has accepted the post, and prints nothing.
            """,
        arguments: [
            PositionalSpec(name: "name", help: "The notification name, e.g. session.willResignActive."),
            PositionalSpec(name: "pairs", help: "KEY=VALUE pairs that make the JSON payload.", arity: .zeroOrMore),
        ],
        options: [
            OptionSpec(
                long: "json",
                valueName: "JSON",
                help: "A JSON object to send as the payload, instead of pairs."
            ),
            OptionSpec(long: "retain", help: "Also store the payload as the name's retained value."),
            CommonOptions.socket,
        ]
    )

    /// The name posted to.
    var name: String
    /// The bytes sent: a JSON object, or nothing to clear a retained value.
    var payload: [UInt8]
    /// Whether the payload also becomes the retained value.
    var retain: Bool
    /// The `--socket` value.
    var socket: String?

    init(_ arguments: ParsedArguments) throws(UsageError) {
        name = arguments.positional("name")[0]
        try CommonOptions.validateName(name, postable: true)
        retain = arguments.flag("retain")
        socket = arguments.value("socket")

        let pairs = arguments.positional("pairs")
        switch (pairs.isEmpty, arguments.value("json")) {
        case (false, .some):
            throw UsageError(message: "Give the payload either as KEY=VALUE pairs or with '--json', not both")
        case (true, .some(let text)):
            payload = JSONValue.encodeObject(try Self.object(fromJSON: text))
        case (false, nil):
            payload = JSONValue.encodeObject(try Self.object(fromPairs: pairs))
        case (true, nil):
            // An empty payload with RETAIN is how the protocol clears a retained value.
            payload = retain ? [] : JSONValue.encodeObject([:])
        }
    }

    func run() async throws(CommandFailure) {
        // Acknowledged, so that exit 0 means the daemon took the post, not merely that it was sent.
        _ = try await Daemon.ask(socket: socket) { herald throws(HeraldError) in
            try await herald.postAcknowledged(name, payload: payload, retain: retain)
        }
    }

    /// Parses `--json`, which must be an object because the payload is the notification's `userInfo`.
    static func object(fromJSON text: String) throws(UsageError) -> [String: JSONValue] {
        guard let value = JSONValue.decode(Array(text.utf8)) else {
            throw UsageError(message: "The value of '--json' is not valid JSON: \(text)")
        }
        guard case .object(let members) = value else {
            throw UsageError(message: "The value of '--json' must be a JSON object, not \(describe(value)): \(text)")
        }
        return members
    }

    /// Makes an object of string values from `KEY=VALUE` words, splitting each at its first `=`.
    ///
    /// A key given twice keeps its last value, as in an environment.
    static func object(fromPairs pairs: [String]) throws(UsageError) -> [String: JSONValue] {
        var members: [String: JSONValue] = [:]
        for pair in pairs {
            guard let equals = pair.firstIndex(of: "="), equals != pair.startIndex else {
                throw UsageError(message: "Expected KEY=VALUE with a non-empty KEY, got '\(pair)'")
            }
            members[String(pair[..<equals])] = .string(String(pair[pair.index(after: equals)...]))
        }
        return members
    }

    /// What kind of JSON value this is, for messages: "an array", "a string".
    private static func describe(_ value: JSONValue) -> String {
        switch value {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}
