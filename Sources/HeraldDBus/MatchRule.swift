/// A match rule for the bus's `AddMatch`: which messages a client wants routed to it.
///
/// Built from its keys and checked with the specification's rules, then rendered with ``description`` as the
/// string `AddMatch` takes (`type='signal',interface='org.freedesktop.DBus',member='NameOwnerChanged'`).
public struct MatchRule: Hashable, Sendable, CustomStringConvertible {
    /// The message type to match.
    public var type: DBusMessage.MessageType?
    /// The sender's bus name.
    public var sender: String?
    /// The interface.
    public var interface: String?
    /// The member.
    public var member: String?
    /// The exact object path.
    public var path: String?
    /// An object path and everything under it.
    public var pathNamespace: String?
    /// The destination's unique name.
    public var destination: String?
    /// String arguments by index (0 to 63): `argN='value'`.
    public var arguments: [Int: String]
    /// Object-path arguments by index: `argNpath='value'`.
    public var pathArguments: [Int: String]
    /// `arg0namespace`: a bus or interface name and its children.
    public var argument0Namespace: String?

    /// Creates a rule and validates it.
    ///
    /// - Throws: ``DBusError`` with ``DBusError/Code/invalidMatchRule`` or ``DBusError/Code/invalidName`` for a key
    ///   whose value breaks the specification's rules, both `path` and `pathNamespace`, an argument index over 63,
    ///   or a value holding a `'` (which a match rule cannot escape inside quotes).
    public init(
        type: DBusMessage.MessageType? = .signal,
        sender: String? = nil,
        interface: String? = nil,
        member: String? = nil,
        path: String? = nil,
        pathNamespace: String? = nil,
        destination: String? = nil,
        arguments: [Int: String] = [:],
        pathArguments: [Int: String] = [:],
        argument0Namespace: String? = nil
    ) throws(DBusError) {
        self.type = type
        self.sender = sender
        self.interface = interface
        self.member = member
        self.path = path
        self.pathNamespace = pathNamespace
        self.destination = destination
        self.arguments = arguments
        self.pathArguments = pathArguments
        self.argument0Namespace = argument0Namespace
        try validate()
    }

    private func validate() throws(DBusError) {
        if case .unknown = type {
            throw DBusError(.invalidMatchRule, "a match rule's type must be a known message type")
        }
        if let sender { try DBusNames.validateBusName(sender) }
        if let interface { try DBusNames.validateInterface(interface) }
        if let member { try DBusNames.validateMember(member) }
        if let path { try DBusNames.validateObjectPath(path) }
        if let pathNamespace { try DBusNames.validateObjectPath(pathNamespace) }
        if let destination { try DBusNames.validateBusName(destination) }
        if path != nil, pathNamespace != nil {
            throw DBusError(.invalidMatchRule, "a match rule cannot have both path and path_namespace")
        }
        if let argument0Namespace {
            // A bus or interface name, or a single element (the specification allows any of these prefixes).
            guard !argument0Namespace.isEmpty, !argument0Namespace.utf8.contains(UInt8(ascii: "'")) else {
                throw DBusError(.invalidMatchRule, "arg0namespace '\(argument0Namespace)' is empty or holds a quote")
            }
        }
        for (index, value) in arguments.merging(pathArguments, uniquingKeysWith: { first, _ in first }) {
            guard (0...63).contains(index) else {
                throw DBusError(.invalidMatchRule, "argument index \(index) is outside 0...63")
            }
            guard !value.utf8.contains(UInt8(ascii: "'")) else {
                throw DBusError(.invalidMatchRule, "arg\(index) '\(value)' holds a quote")
            }
        }
        if let argument0Namespace, arguments[0] != nil || pathArguments[0] != nil {
            throw DBusError(.invalidMatchRule, "arg0namespace '\(argument0Namespace)' and arg0 together")
        }
    }

    /// The rule as `AddMatch` takes it, keys in a fixed order.
    public var description: String {
        var keys: [String] = []
        if let type {
            let name =
                switch type {
                case .methodCall: "method_call"
                case .methodReturn: "method_return"
                case .error: "error"
                case .signal: "signal"
                case .unknown: "signal"
                }
            keys.append("type='\(name)'")
        }
        if let sender { keys.append("sender='\(sender)'") }
        if let interface { keys.append("interface='\(interface)'") }
        if let member { keys.append("member='\(member)'") }
        if let path { keys.append("path='\(path)'") }
        if let pathNamespace { keys.append("path_namespace='\(pathNamespace)'") }
        if let destination { keys.append("destination='\(destination)'") }
        for index in arguments.keys.sorted() { keys.append("arg\(index)='\(arguments[index]!)'") }
        for index in pathArguments.keys.sorted() { keys.append("arg\(index)path='\(pathArguments[index]!)'") }
        if let argument0Namespace { keys.append("arg0namespace='\(argument0Namespace)'") }
        return keys.joined(separator: ",")
    }

    /// Whether `message` is one this rule matches; the bus decides routing, this lets a client with several rules
    /// deliver each message to the subscriptions that asked for it.
    public func matches(_ message: DBusMessage) -> Bool {
        if let type, type != message.type { return false }
        // The bus rewrites a well-known sender to the owner's unique name, so only unique names can be compared here.
        if let sender, sender.utf8.first == UInt8(ascii: ":"), sender != message.sender { return false }
        if let interface, interface != message.interface { return false }
        if let member, member != message.member { return false }
        if let path, path != message.path { return false }
        if let pathNamespace {
            guard let messagePath = message.path else { return false }
            if pathNamespace != "/", messagePath != pathNamespace, !messagePath.hasPrefix(pathNamespace + "/") {
                return false
            }
        }
        if let destination, destination != message.destination { return false }
        for (index, value) in arguments {
            guard index < message.body.count, case .string(let argument) = message.body[index], argument == value
            else { return false }
        }
        for (index, value) in pathArguments {
            guard index < message.body.count, let argument = message.body[index].stringValue else { return false }
            let matches =
                argument == value || (value.hasSuffix("/") && argument.hasPrefix(value))
                || (argument.hasSuffix("/") && value.hasPrefix(argument))
            if !matches { return false }
        }
        if let argument0Namespace {
            guard let first = message.body.first, case .string(let argument) = first else { return false }
            if argument != argument0Namespace, !argument.hasPrefix(argument0Namespace + ".") { return false }
        }
        return true
    }
}
