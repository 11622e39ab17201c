public import HeraldDBus

extension DBusClient {
    /// A `PropertiesChanged` signal, taken apart.
    public struct PropertiesChange: Hashable, Sendable {
        /// The object's path.
        public var path: String
        /// The interface whose properties changed.
        public var interface: String
        /// The new values.
        public var changed: [String: DBusValue]
        /// The properties that changed without their values being sent.
        public var invalidated: [String]

        /// Reads a `PropertiesChanged` signal (`sa{sv}as`); nil for anything else.
        public init?(_ message: DBusMessage) {
            guard message.member == "PropertiesChanged", message.body.count == 3,
                let path = message.path, case .string(let interface) = message.body[0],
                let changed = message.body[1].stringDictionary, case .array(.string, let invalidated) = message.body[2]
            else { return nil }
            self.path = path
            self.interface = interface
            self.changed = changed.mapValues(\.unwrapped)
            self.invalidated = invalidated.compactMap(\.stringValue)
        }
    }

    /// Reads one property (`org.freedesktop.DBus.Properties.Get`), unwrapped from its variant.
    ///
    /// - Throws: ``DBusClientError``, e.g. an error reply `org.freedesktop.DBus.Error.UnknownProperty`.
    public func property(
        _ name: String,
        of interface: String,
        at path: String,
        on destination: String
    ) async throws(DBusClientError) -> DBusValue {
        let body = try await call(
            destination: destination,
            path: path,
            interface: "org.freedesktop.DBus.Properties",
            member: "Get",
            [.string(interface), .string(name)]
        )
        guard body.count == 1, case .variant(let value) = body[0] else {
            throw DBusClientError(.protocolViolation, "Properties.Get answered '\(body)', not 'v'")
        }
        return value
    }

    /// Reads all properties of `interface` (`org.freedesktop.DBus.Properties.GetAll`), unwrapped from their variants.
    ///
    /// - Throws: ``DBusClientError``.
    public func properties(
        of interface: String,
        at path: String,
        on destination: String
    ) async throws(DBusClientError) -> [String: DBusValue] {
        let body = try await call(
            destination: destination,
            path: path,
            interface: "org.freedesktop.DBus.Properties",
            member: "GetAll",
            [.string(interface)]
        )
        guard body.count == 1, let properties = body[0].stringDictionary else {
            throw DBusClientError(.protocolViolation, "Properties.GetAll answered '\(body)', not 'a{sv}'")
        }
        return properties.mapValues(\.unwrapped)
    }

    /// Subscribes to `PropertiesChanged` of `interface` on the object at `path`.
    ///
    /// - Throws: ``DBusClientError``.
    public func propertiesChanged(of interface: String, at path: String) async throws(DBusClientError) -> DBusSignals {
        let rule: MatchRule
        do {
            rule = try MatchRule(
                interface: "org.freedesktop.DBus.Properties",
                member: "PropertiesChanged",
                path: path,
                arguments: [0: interface]
            )
        } catch {
            throw DBusClientError(.protocolViolation, "cannot match PropertiesChanged of \(path): \(error)")
        }
        return try await signals(matching: rule)
    }
}
