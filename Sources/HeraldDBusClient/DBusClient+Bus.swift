import HeraldDBus

extension DBusClient {
    /// A change of a bus name's owner, from `NameOwnerChanged`.
    public struct NameOwnerChange: Hashable, Sendable {
        /// The name.
        public var name: String
        /// The unique name that owned it, or nil.
        public var oldOwner: String?
        /// The unique name that owns it now, or nil when the name is gone.
        public var newOwner: String?
    }

    /// The names on the bus (`ListNames`).
    ///
    /// - Throws: ``DBusClientError``.
    public func listNames() async throws(DBusClientError) -> [String] {
        let body = try await call(try Self.busMethod("ListNames", [])).body
        guard case .array(.string, let names) = body.first else {
            throw DBusClientError(.protocolViolation, "ListNames answered '\(body)', not 'as'")
        }
        return names.compactMap(\.stringValue)
    }

    /// The unique name owning `name` (`GetNameOwner`), or nil when nobody owns it.
    ///
    /// - Throws: ``DBusClientError`` for anything but `NameHasNoOwner`.
    public func nameOwner(of name: String) async throws(DBusClientError) -> String? {
        do throws(DBusClientError) {
            let body = try await call(try Self.busMethod("GetNameOwner", [.string(name)])).body
            guard case .string(let owner) = body.first else {
                throw DBusClientError(.protocolViolation, "GetNameOwner answered '\(body)', not 's'")
            }
            return owner
        } catch  where error.errorName == "org.freedesktop.DBus.Error.NameHasNoOwner" {
            return nil
        }
    }

    /// Follows the owner of `name`: each `NameOwnerChanged` for it, as the service comes and goes.
    ///
    /// - Throws: ``DBusClientError`` when the bus refuses the match.
    public func nameOwnerChanges(of name: String) async throws(DBusClientError) -> NameOwnerChanges {
        let rule: MatchRule
        do {
            rule = try MatchRule(
                sender: "org.freedesktop.DBus",
                interface: "org.freedesktop.DBus",
                member: "NameOwnerChanged",
                path: "/org/freedesktop/DBus",
                arguments: [0: name]
            )
        } catch {
            throw DBusClientError(.protocolViolation, "cannot follow '\(name)': \(error)")
        }
        return NameOwnerChanges(signals: try await signals(matching: rule))
    }
}

/// The owner changes of one name; see ``DBusClient/nameOwnerChanges(of:)``.
public struct NameOwnerChanges: AsyncSequence, Sendable {
    public typealias Element = DBusClient.NameOwnerChange

    /// The underlying signals, for ``DBusSignals/droppedCount``.
    public let signals: DBusSignals

    /// An iterator over the changes.
    public struct AsyncIterator: AsyncIteratorProtocol {
        var base: DBusSignals.AsyncIterator

        public mutating func next() async -> DBusClient.NameOwnerChange? {
            while let message = await base.next() {
                guard message.body.count == 3, let name = message.body[0].stringValue,
                    let old = message.body[1].stringValue, let new = message.body[2].stringValue
                else { continue }
                return DBusClient.NameOwnerChange(
                    name: name,
                    oldOwner: old.isEmpty ? nil : old,
                    newOwner: new.isEmpty ? nil : new
                )
            }
            return nil
        }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: signals.makeAsyncIterator())
    }
}
