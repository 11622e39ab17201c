public import HeraldDBus

/// A desktop notification asked for by a post to `notify.desktop`: `{"summary", "body"?, "urgency"?, "actions"?}`.
///
/// `urgency` is `"low"`, `"normal"` or `"critical"` (or 0, 1, 2); `actions` is an object `{"key": "label"}` or an
/// array of alternating keys and labels, as the specification's `Notify` takes them.
public struct DesktopNotification: Hashable, Sendable {
    /// The title.
    public var summary: String
    /// The text under it.
    public var body: String
    /// 0 low, 1 normal, 2 critical.
    public var urgency: UInt8
    /// Keys and labels, alternating.
    public var actions: [String]
    /// How long the server shows it, in milliseconds; -1 lets the server decide.
    public var timeout: Int32

    /// The summary, body and actions a notification may carry, each at most this many bytes, so a post cannot make
    /// the bridge send a huge message.
    public static let maximumTextBytes = 4096

    /// Reads a `notify.desktop` payload.
    ///
    /// - Throws: ``DBusError`` with ``DBusError/Code/jsonMismatch`` saying which field is wrong.
    public init(_ payload: DBusJSON) throws(DBusError) {
        func refuse(_ why: String) -> DBusError { DBusError(.jsonMismatch, "notify.desktop: \(why)") }
        guard case .object(let object) = payload else { throw refuse("the payload must be a JSON object") }
        guard case .string(let summary)? = object["summary"], !summary.isEmpty else {
            throw refuse("\"summary\" must be a non-empty string")
        }
        func checked(_ value: String, _ field: String) throws(DBusError) -> String {
            guard value.utf8.count <= Self.maximumTextBytes, !value.utf8.contains(0) else {
                throw refuse("\"\(field)\" must be at most \(Self.maximumTextBytes) bytes, with no NUL")
            }
            return value
        }
        self.summary = try checked(summary, "summary")
        switch object["body"] {
        case nil, .null?: body = ""
        case .string(let text)?: body = try checked(text, "body")
        default: throw refuse("\"body\" must be a string")
        }
        switch object["urgency"] {
        case nil, .null?, .string("normal")?: urgency = 1
        case .string("low")?: urgency = 0
        case .string("critical")?: urgency = 2
        case .number(let number)? where number == 0 || number == 1 || number == 2: urgency = UInt8(number)
        default: throw refuse("\"urgency\" must be \"low\", \"normal\" or \"critical\"")
        }
        switch object["actions"] {
        case nil, .null?: actions = []
        case .object(let pairs)?:
            var list: [String] = []
            for key in pairs.keys.sorted() {
                guard case .string(let label) = pairs[key]! else {
                    throw refuse("each action's label must be a string")
                }
                list += [try checked(key, "actions"), try checked(label, "actions")]
            }
            actions = list
        case .array(let items)?:
            var list: [String] = []
            for item in items {
                guard case .string(let entry) = item else { throw refuse("\"actions\" must hold strings") }
                list.append(try checked(entry, "actions"))
            }
            guard list.count % 2 == 0 else { throw refuse("\"actions\" must alternate keys and labels") }
            actions = list
        default: throw refuse("\"actions\" must be an object or an array of strings")
        }
        guard actions.count <= 32 else { throw refuse("at most 16 actions") }
        switch object["timeout"] {
        case nil, .null?: timeout = -1
        case .number(let number)? where number >= -1 && number <= Double(Int32.max) && number.rounded() == number:
            timeout = Int32(number)
        default: throw refuse("\"timeout\" must be milliseconds, or -1")
        }
    }

    /// The arguments of `org.freedesktop.Notifications.Notify` (`susssasa{sv}i`).
    public func notifyArguments(appName: String) -> [DBusValue] {
        [
            .string(appName), .uint32(0), .string(""), .string(summary), .string(body),
            .array(.string, actions.map { .string($0) }),
            .dictionary(key: .string, value: .variant, [(.string("urgency"), .variant(.byte(urgency)))]),
            .int32(timeout),
        ]
    }

    /// The post for an `ActionInvoked(u id, s key)` signal.
    public static func actionInvoked(_ arguments: [DBusValue]) -> DesktopPost? {
        guard arguments.count >= 2, case .uint32(let id) = arguments[0], case .string(let key) = arguments[1] else {
            return nil
        }
        return DesktopPost("notify.desktop.action", ["id": .number(Double(id)), "action": .string(key)], retain: false)
    }

    /// The post for a `NotificationClosed(u id, u reason)` signal.
    public static func closed(_ arguments: [DBusValue]) -> DesktopPost? {
        guard arguments.count >= 2, case .uint32(let id) = arguments[0], case .uint32(let code) = arguments[1] else {
            return nil
        }
        let reason =
            switch code {
            case 1: "expired"
            case 2: "dismissed"
            case 3: "closed"
            default: "undefined"
            }
        return DesktopPost(
            "notify.desktop.closed",
            ["id": .number(Double(id)), "reason": .string(reason)],
            retain: false
        )
    }

    /// The notification id in an `ActionInvoked` or `NotificationClosed` signal.
    public static func id(in arguments: [DBusValue]) -> UInt32? {
        guard case .uint32(let id)? = arguments.first else { return nil }
        return id
    }
}
