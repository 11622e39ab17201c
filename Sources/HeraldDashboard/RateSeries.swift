/// Posts counted per second over a fixed window (5 minutes by default): a ring of counters, one per second.
///
/// Seconds are whole seconds of any clock the owner chooses (the dashboard uses the wall clock). A post in a second
/// newer than any seen moves the window forward, zeroing the seconds skipped; one older than the window is ignored.
/// Memory is fixed at creation: 4 bytes a second.
public struct RateSeries: Sendable, Equatable {
    /// How many seconds the window holds.
    public let capacity: Int
    private var counts: [UInt32]
    /// The newest second counted, or nil before the first.
    public private(set) var newestSecond: Int64?

    /// An empty series of `capacity` seconds.
    public init(capacity: Int = 300) {
        precondition(capacity > 0, "a rate series needs at least one second")
        self.capacity = capacity
        counts = Array(repeating: 0, count: capacity)
    }

    /// Counts `count` posts in `second`.
    public mutating func record(second: Int64, count: UInt32 = 1) {
        advance(to: second)
        guard let newest = newestSecond, second > newest - Int64(capacity) else { return }
        let slot = index(of: second)
        counts[slot] = counts[slot] &+ count
    }

    /// The posts counted in `second`; 0 outside the window.
    public func count(at second: Int64) -> UInt32 {
        guard let newest = newestSecond, second <= newest, second > newest - Int64(capacity) else { return 0 }
        return counts[index(of: second)]
    }

    /// The window's counts ending at `second` (inclusive), oldest first: `capacity` values.
    public func values(endingAt second: Int64) -> [UInt32] {
        (0..<Int64(capacity)).map { count(at: second - Int64(capacity) + 1 + $0) }
    }

    /// Moves the window so that `second` is in it, zeroing the seconds it passes; nothing for an older second.
    private mutating func advance(to second: Int64) {
        guard let newest = newestSecond else {
            newestSecond = second
            return
        }
        guard second > newest else { return }
        let skipped = second - newest
        if skipped >= Int64(capacity) {
            for slot in counts.indices { counts[slot] = 0 }
        } else {
            for passed in (newest + 1)...second { counts[index(of: passed)] = 0 }
        }
        newestSecond = second
    }

    private func index(of second: Int64) -> Int {
        let capacity = Int64(self.capacity)
        return Int(((second % capacity) + capacity) % capacity)
    }
}
