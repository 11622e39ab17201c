public import HeraldDBus

/// Whether the session is idle, from logind's `IdleHint` and `IdleSinceHint` of this session: `session.idle`,
/// `{"idle": bool, "since": ISO 8601 | null}`, retained, posted when it changes.
public struct SessionIdle: Sendable {
    private var idle: Bool?
    private var sinceMicroseconds: UInt64 = 0
    private var posted: [String: DBusJSON]?

    /// Not known yet.
    public init() {}

    /// The session's properties read in full, or changed.
    public mutating func sessionPropertiesChanged(_ properties: [String: DBusValue]) -> SourceUpdate {
        var reader = PropertyReader(properties, of: "org.freedesktop.login1.Session")
        if let hint = reader.bool("IdleHint") { idle = hint }
        if let since = reader.uint64("IdleSinceHint") { sinceMicroseconds = since }
        var update = SourceUpdate(refusals: reader.refusals)
        guard let idle else { return update }
        let payload: [String: DBusJSON] = [
            "idle": .bool(idle),
            "since": sinceMicroseconds == 0 ? .null : .string(ISOTime.string(microseconds: sinceMicroseconds)),
        ]
        if payload != posted {
            posted = payload
            update.posts.append(DesktopPost("session.idle", payload, retain: true))
        }
        return update
    }

    /// logind left: `session.idle` is cleared.
    public mutating func serviceLeft() -> SourceUpdate {
        guard posted != nil else { return SourceUpdate() }
        self = SessionIdle()
        return SourceUpdate(posts: [DesktopPost("session.idle", nil, retain: true)])
    }
}
