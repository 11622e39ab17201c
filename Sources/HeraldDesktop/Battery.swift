public import HeraldDBus

/// The battery, from UPower's DisplayDevice (`Percentage`, `State`, `TimeToEmpty`) and its `OnBattery`:
/// `power.battery`, `{"percentage", "state", "onBattery", "timeToEmpty"}`, retained, posted when it changes.
public struct Battery: Sendable {
    private var percentage: Double?
    private var state: UInt32?
    private var timeToEmpty: Int64?
    private var onBattery: Bool?
    private var posted: [String: DBusJSON]?

    /// Not known yet.
    public init() {}

    /// UPower's device states (`State`), by number.
    static let stateNames = [
        "unknown", "charging", "discharging", "empty", "fully-charged", "pending-charge", "pending-discharge",
    ]

    /// The DisplayDevice's properties (`org.freedesktop.UPower.Device`) read in full, or changed.
    public mutating func displayDeviceChanged(_ properties: [String: DBusValue]) -> SourceUpdate {
        var reader = PropertyReader(properties, of: "org.freedesktop.UPower.Device")
        if let value = reader.double("Percentage") { percentage = value }
        if let value = reader.uint32("State") { state = value }
        if let value = reader.int64("TimeToEmpty") { timeToEmpty = value }
        return settle(reader.refusals)
    }

    /// UPower's own properties (`org.freedesktop.UPower`) read in full, or changed.
    public mutating func managerChanged(_ properties: [String: DBusValue]) -> SourceUpdate {
        var reader = PropertyReader(properties, of: "org.freedesktop.UPower")
        if let value = reader.bool("OnBattery") { onBattery = value }
        return settle(reader.refusals)
    }

    /// UPower read in full: its own properties and the DisplayDevice's, settled once.
    public mutating func read(manager: [String: DBusValue], device: [String: DBusValue]) -> SourceUpdate {
        var managerReader = PropertyReader(manager, of: "org.freedesktop.UPower")
        if let value = managerReader.bool("OnBattery") { onBattery = value }
        var update = displayDeviceChanged(device)
        update.refusals += managerReader.refusals
        return update
    }

    /// UPower left: `power.battery` is cleared.
    public mutating func serviceLeft() -> SourceUpdate {
        let had = posted != nil
        self = Battery()
        return had ? SourceUpdate(posts: [DesktopPost("power.battery", nil, retain: true)]) : SourceUpdate()
    }

    private mutating func settle(_ refusals: [String]) -> SourceUpdate {
        var update = SourceUpdate(refusals: refusals)
        guard percentage != nil || onBattery != nil else { return update }
        let stateName = state.map { Int($0) < Self.stateNames.count ? Self.stateNames[Int($0)] : "unknown" }
        let payload: [String: DBusJSON] = [
            "percentage": percentage.map { .number($0) } ?? .null,
            "state": stateName.map { .string($0) } ?? .null,
            "onBattery": onBattery.map { .bool($0) } ?? .null,
            "timeToEmpty": timeToEmpty.map { .number(Double($0)) } ?? .null,
        ]
        if payload != posted {
            posted = payload
            update.posts.append(DesktopPost("power.battery", payload, retain: true))
        }
        return update
    }
}
