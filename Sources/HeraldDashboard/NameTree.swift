/// Every name the dashboard knows, with its retained value, its last post and its posts per second.
///
/// Names come from `NAMES`, `GET` and the posts a `MONITOR` sees. The tree holds at most ``capacity`` names, plus
/// ``reservedCapacity`` more for the daemon's and the bridges' own (`herald.`, `bridge.`), so that a flood of new
/// names can neither grow it without bound nor push the plugins' and bridges' states out. Posts to names past the
/// bound are counted in ``untrackedPosts``.
public struct NameTree: Sendable {
    /// One name's entry.
    public struct Entry: Sendable, Equatable {
        /// The retained value's first ``NameTree/maximumValueBytes``; nil when the name has none.
        public var retained: [UInt8]?
        /// Whether ``retained`` was cut.
        public var retainedTruncated = false
        /// The sequence number of the post or `GET` answer that set ``retained``: an older answer does not replace
        /// a newer post.
        public var retainedSequence: UInt64 = 0
        /// When its last post was stamped, in nanoseconds since 1970; nil when none was seen.
        public var lastPostNanoseconds: UInt64?
        /// Its posts per second over the last 5 minutes.
        public var series = RateSeries()
        /// The live subscriptions matching it, monitors left out, as `NAMES` last counted them; nil when unknown: the
        /// last `NAMES` did not list it (only posted, never retained or exactly subscribed), or heraldd cannot count.
        public var subscribers: Int?
    }

    /// The most bytes of a retained value kept for the page.
    public static let maximumValueBytes = 16 * 1024

    /// The most names kept, besides the reserved ones.
    public let capacity: Int
    /// The most names under `herald.` and `bridge.` kept past ``capacity``.
    public let reservedCapacity: Int
    public private(set) var entries: [String: Entry] = [:]
    private var reservedCount = 0
    /// Posts to names that did not fit.
    public private(set) var untrackedPosts: UInt64 = 0
    /// Names changed since the last ``takeChanged()``.
    private var changed: Set<String> = []

    /// An empty tree.
    public init(capacity: Int = 2048, reservedCapacity: Int = 256) {
        self.capacity = capacity
        self.reservedCapacity = reservedCapacity
    }

    /// Whether `name` is the daemon's or a bridge's own.
    public static func isReserved(_ name: String) -> Bool {
        name.hasPrefix("herald.") || name.hasPrefix("bridge.")
    }

    /// A post was seen.
    ///
    /// - Parameters:
    ///   - second: the second it counts in, for the rates.
    ///   - setsRetained: whether it set the retained value (or, empty, cleared it).
    public mutating func postSeen(
        _ name: String,
        payload: some Collection<UInt8>,
        timeNanoseconds: UInt64,
        sequence: UInt64,
        setsRetained: Bool,
        second: Int64
    ) {
        guard makeRoom(for: name) else {
            untrackedPosts += 1
            return
        }
        entries[name, default: Entry()].lastPostNanoseconds = timeNanoseconds
        entries[name]!.series.record(second: second)
        if setsRetained {
            setRetained(name, payload: payload, sequence: sequence)
        }
        changed.insert(name)
    }

    /// A retained value was read with `GET` (or a name listed by `NAMES` has none: `payload` nil). Kept only when no
    /// newer post set the value since; its post time (`timeNanoseconds`) is the name's last post until one is seen.
    public mutating func retainedValueRead(
        _ name: String,
        payload: [UInt8]?,
        sequence: UInt64,
        timeNanoseconds: UInt64? = nil
    ) {
        guard makeRoom(for: name) else { return }
        if entries[name] == nil { entries[name] = Entry() }
        guard let payload else {
            changed.insert(name)
            return
        }
        guard sequence >= entries[name]!.retainedSequence else { return }
        setRetained(name, payload: payload, sequence: sequence)
        if entries[name]!.lastPostNanoseconds == nil { entries[name]!.lastPostNanoseconds = timeNanoseconds }
        changed.insert(name)
    }

    /// `NAMES` with counts answered: each listed name's subscriber count (nil when heraldd cannot count). A listed
    /// name joins the tree if it fits; the names it did not list have their count unknown again.
    public mutating func subscriberCountsRead(_ listed: [(name: String, subscribers: Int?)]) {
        var seen: Set<String> = []
        for (name, subscribers) in listed {
            seen.insert(name)
            guard makeRoom(for: name) else { continue }
            if entries[name] == nil {
                entries[name] = Entry()
                changed.insert(name)
            }
            if entries[name]!.subscribers != subscribers {
                entries[name]!.subscribers = subscribers
                changed.insert(name)
            }
        }
        for (name, entry) in entries where entry.subscribers != nil && !seen.contains(name) {
            entries[name]!.subscribers = nil
            changed.insert(name)
        }
    }

    private mutating func setRetained(_ name: String, payload: some Collection<UInt8>, sequence: UInt64) {
        entries[name]!.retainedSequence = sequence
        if payload.isEmpty {
            entries[name]!.retained = nil
            entries[name]!.retainedTruncated = false
        } else {
            entries[name]!.retained = Array(payload.prefix(Self.maximumValueBytes))
            entries[name]!.retainedTruncated = payload.count > Self.maximumValueBytes
        }
    }

    /// Whether `name` is in the tree or fits in it now (adding nothing yet).
    private mutating func makeRoom(for name: String) -> Bool {
        if entries[name] != nil { return true }
        if Self.isReserved(name) {
            guard reservedCount < reservedCapacity else { return false }
            reservedCount += 1
            return true
        }
        return entries.count - reservedCount < capacity
    }

    /// The posts counted for `name` in `second`; 0 for an unknown name.
    public func posts(of name: String, at second: Int64) -> UInt32 {
        entries[name]?.series.count(at: second) ?? 0
    }

    /// The names changed since the last call, sorted, at most `limit` of them; the rest stay changed for the next.
    public mutating func takeChanged(limit: Int = .max) -> [String] {
        let taken = Array(changed.sorted().prefix(limit))
        if taken.count == changed.count {
            changed.removeAll(keepingCapacity: true)
        } else {
            changed.subtract(taken)
        }
        return taken
    }

    /// Every name in the tree's order: segment by segment (bytewise within a segment), so that a parent comes
    /// right before its children ("a", "a.b", "a-b"), which a plain bytewise sort would split ("a", "a-b", "a.b").
    public var sortedNames: [String] {
        entries.keys.map { ($0, $0.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)) }
            .sorted { lhs, rhs in
                lhs.1.lexicographicallyPrecedes(rhs.1) { $0.lexicographicallyPrecedes($1) }
            }
            .map(\.0)
    }

    /// How many names are kept.
    public var count: Int { entries.count }
}
