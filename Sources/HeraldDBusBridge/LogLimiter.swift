/// At most one log line a second per kind of event, each saying how many events it stands for: a flood of 3,000
/// refused messages is a few lines, not 3,000.
struct LogLimiter: Sendable {
    private struct Kind: Sendable {
        var lastLine: ContinuousClock.Instant
        var unlogged: Int
    }

    private var kinds: [String: Kind] = [:]
    let interval: Duration

    init(interval: Duration = .seconds(1)) {
        self.interval = interval
    }

    /// One more event of `kind` at `now`.
    ///
    /// - Returns: how many events a line logged now stands for (this one included), or nil when a line for `kind`
    ///   was logged within the interval (the event is counted towards the next line).
    mutating func event(_ kind: String, at now: ContinuousClock.Instant = .now) -> Int? {
        guard var entry = kinds[kind] else {
            // Kinds come from what services send: bounded, so that a service inventing reasons cannot grow it.
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
