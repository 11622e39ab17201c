public import HeraldDBus

/// Suspend and resume, from logind's `PrepareForSleep` and its `PreparingForSleep` property.
///
/// `system.sleep` holds `{"sleeping": bool}`, retained; `system.willSleep` and `system.didWake` follow it. On wake
/// the owner reads every source again (``Output/rereadAll``), since services change state while the machine sleeps
/// and say nothing.
public struct SystemSleep: Sendable {
    /// What the owner does after an event.
    public struct Output: Hashable, Sendable {
        /// The posts and refusals.
        public var update = SourceUpdate()
        /// Read every source again: the machine woke up.
        public var rereadAll = false
    }

    private var sleeping: Bool?

    /// Not known yet.
    public init() {}

    /// `PrepareForSleep(start)`.
    public mutating func prepareForSleep(_ start: Bool) -> Output {
        var output = Output()
        guard sleeping != start else { return output }
        let first = sleeping == nil
        sleeping = start
        output.update.posts.append(DesktopPost("system.sleep", ["sleeping": .bool(start)], retain: true))
        if !first || start {
            output.update.posts.append(DesktopPost(start ? "system.willSleep" : "system.didWake", [:], retain: false))
        }
        output.rereadAll = !start && !first
        return output
    }

    /// The manager's properties read in full, or changed (`PreparingForSleep`).
    public mutating func managerPropertiesChanged(_ properties: [String: DBusValue]) -> Output {
        var reader = PropertyReader(properties, of: "org.freedesktop.login1.Manager")
        var output = Output()
        if let preparing = reader.bool("PreparingForSleep") {
            // Read at start or after a reconnection: the state, without the notifications of a transition nobody saw.
            if sleeping == nil {
                sleeping = preparing
                output.update.posts.append(DesktopPost("system.sleep", ["sleeping": .bool(preparing)], retain: true))
            } else {
                output = prepareForSleep(preparing)
            }
        }
        output.update.refusals += reader.refusals
        return output
    }
}
