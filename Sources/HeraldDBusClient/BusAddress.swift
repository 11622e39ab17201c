/// Where a bus listens: the entries of a D-Bus address (`unix:path=/run/user/1000/bus,guid=...;...`), tried in
/// order.
public struct BusAddress: Hashable, Sendable, CustomStringConvertible {
    /// One transport this client can connect to.
    public enum Transport: Hashable, Sendable {
        /// `unix:path=`: a socket in the file system.
        case path(String)
        /// `unix:abstract=`: a Linux abstract socket name (may hold any byte).
        case abstract([UInt8])
    }

    /// One address entry: its transport and the server's `guid`, if the address names one.
    public struct Entry: Hashable, Sendable {
        /// Where to connect.
        public var transport: Transport
        /// The server's GUID, which the SASL `OK` must repeat when set.
        public var guid: String?
    }

    /// The entries this client can use, in the address's order; others (tcp, launchd...) are skipped.
    public var entries: [Entry]
    /// The address as given.
    public var description: String

    /// The system bus's address when `DBUS_SYSTEM_BUS_ADDRESS` is not set.
    public static let defaultSystemAddress = "unix:path=/run/dbus/system_bus_socket"

    /// Parses a D-Bus address.
    ///
    /// - Throws: ``DBusClientError`` with ``DBusClientError/Code/badAddress`` when no entry is a `unix:path=` or
    ///   `unix:abstract=` address, or a value's `%` escape is malformed.
    public init(parsing address: String) throws(DBusClientError) {
        description = address
        entries = []
        for entryText in address.split(separator: ";") {
            guard let colon = entryText.firstIndex(of: ":") else { continue }
            let method = entryText[..<colon]
            guard method == "unix" else { continue }
            var path: String?
            var abstract: [UInt8]?
            var guid: String?
            for pair in entryText[entryText.index(after: colon)...].split(separator: ",") {
                guard let equals = pair.firstIndex(of: "=") else {
                    throw DBusClientError(.badAddress, "'\(pair)' in the address '\(address)' is not key=value")
                }
                let key = pair[..<equals]
                let value = try Self.unescape(pair[pair.index(after: equals)...], in: address)
                switch key {
                case "path": path = String(decoding: value, as: UTF8.self)
                case "abstract": abstract = value
                case "guid": guid = String(decoding: value, as: UTF8.self)
                default: continue
                }
            }
            if let path {
                entries.append(Entry(transport: .path(path), guid: guid))
            } else if let abstract {
                entries.append(Entry(transport: .abstract(abstract), guid: guid))
            }
        }
        guard !entries.isEmpty else {
            throw DBusClientError(.badAddress, "no unix:path= or unix:abstract= entry in the bus address '\(address)'")
        }
    }

    /// The session bus: `DBUS_SESSION_BUS_ADDRESS`.
    ///
    /// - Throws: ``DBusClientError`` with ``DBusClientError/Code/badAddress`` when it is unset or unusable.
    public static func session(environment: [String: String]) throws(DBusClientError) -> BusAddress {
        guard let address = environment["DBUS_SESSION_BUS_ADDRESS"], !address.isEmpty else {
            throw DBusClientError(.badAddress, "DBUS_SESSION_BUS_ADDRESS is not set: there is no session bus")
        }
        return try BusAddress(parsing: address)
    }

    /// The system bus: `DBUS_SYSTEM_BUS_ADDRESS`, or `/run/dbus/system_bus_socket`.
    ///
    /// - Throws: ``DBusClientError`` with ``DBusClientError/Code/badAddress`` when the variable is unusable.
    public static func system(environment: [String: String]) throws(DBusClientError) -> BusAddress {
        let address = environment["DBUS_SYSTEM_BUS_ADDRESS"].flatMap { $0.isEmpty ? nil : $0 }
        return try BusAddress(parsing: address ?? defaultSystemAddress)
    }

    /// Decodes a value's `%XX` escapes.
    private static func unescape(_ text: Substring, in address: String) throws(DBusClientError) -> [UInt8] {
        var bytes: [UInt8] = []
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next().flatMap(hexDigit), let low = iterator.next().flatMap(hexDigit) else {
                throw DBusClientError(.badAddress, "a malformed % escape in the bus address '\(address)'")
            }
            bytes.append(high << 4 | low)
        }
        return bytes
    }

    private static func hexDigit(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
