/// At most one log line a second per kind of event, each saying how many events it stands for: a flood of 3,000
/// refused messages is a few lines, not 3,000. Both bridges log through one, since what they log about comes from
/// outside: remote hosts and D-Bus services.
public struct LogLimiter: Sendable {
    private struct Kind: Sendable {
        var lastLine: ContinuousClock.Instant
        var unlogged: Int
    }

    private var kinds: [String: Kind] = [:]
    /// How long one line stands for the events of its kind.
    public let interval: Duration

    /// A limiter that logs each kind at most once per `interval`.
    public init(interval: Duration = .seconds(1)) {
        self.interval = interval
    }

    /// One more event of `kind` at `now`.
    ///
    /// - Returns: how many events a line logged now stands for (this one included), or nil when a line for `kind`
    ///   was logged within the interval (the event is counted towards the next line).
    public mutating func event(_ kind: String, at now: ContinuousClock.Instant = .now) -> Int? {
        guard var entry = kinds[kind] else {
            // Kinds come from what others send: bounded, so that a peer inventing reasons cannot grow the table. Past
            // 256 kinds the table starts again, which can only log a line early, never lose a count of this kind.
            if kinds.count >= 256 { kinds.removeAll() }
            kinds[kind] = Kind(lastLine: now, unlogged: 0)
            return 1
        }
        entry.unlogged += 1
        guard now - entry.lastLine >= interval else {
            kinds[kind] = entry
            return nil
        }
        let count = entry.unlogged
        kinds[kind] = Kind(lastLine: now, unlogged: 0)
        return count
    }
}
