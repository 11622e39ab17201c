public import HeraldDBus

/// The network, from NetworkManager's `State` (and `StateChanged`) and `Connectivity`: `network.state`,
/// `{"state", "connectivity"}`, retained, posted when it changes.
public struct Network: Sendable {
    private var state: UInt32?
    private var connectivity: UInt32?
    private var posted: [String: DBusJSON]?

    /// Not known yet.
    public init() {}

    /// NMState's names, by number.
    static func stateName(_ state: UInt32) -> String {
        switch state {
        case 10: "asleep"
        case 20: "disconnected"
        case 30: "disconnecting"
        case 40: "connecting"
        case 50: "connected-local"
        case 60: "connected-site"
        case 70: "connected-global"
        default: "unknown"
        }
    }

    /// NMConnectivityState's names, by number.
    static func connectivityName(_ connectivity: UInt32) -> String {
        switch connectivity {
        case 1: "none"
        case 2: "portal"
        case 3: "limited"
        case 4: "full"
        default: "unknown"
        }
    }

    /// NetworkManager's properties (`org.freedesktop.NetworkManager`) read in full, or changed.
    public mutating func propertiesChanged(_ properties: [String: DBusValue]) -> SourceUpdate {
        var reader = PropertyReader(properties, of: "org.freedesktop.NetworkManager")
        if let value = reader.uint32("State") { state = value }
        if let value = reader.uint32("Connectivity") { connectivity = value }
        return settle(reader.refusals)
    }

    /// `StateChanged(u)`.
    public mutating func stateChanged(_ arguments: [DBusValue]) -> SourceUpdate {
        guard arguments.count == 1, case .uint32(let value) = arguments[0] else {
            return SourceUpdate(refusals: ["org.freedesktop.NetworkManager.StateChanged must carry 'u'"])
        }
        state = value
        return settle([])
    }

    /// NetworkManager left: `network.state` is cleared.
    public mutating func serviceLeft() -> SourceUpdate {
        let had = posted != nil
        self = Network()
        return had ? SourceUpdate(posts: [DesktopPost("network.state", nil, retain: true)]) : SourceUpdate()
    }

    private mutating func settle(_ refusals: [String]) -> SourceUpdate {
        var update = SourceUpdate(refusals: refusals)
        guard let state else { return update }
        let payload: [String: DBusJSON] = [
            "state": .string(Self.stateName(state)),
            "connectivity": .string(connectivity.map(Self.connectivityName) ?? "unknown"),
        ]
        if payload != posted {
            posted = payload
            update.posts.append(DesktopPost("network.state", payload, retain: true))
        }
        return update
    }
}
