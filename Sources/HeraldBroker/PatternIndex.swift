public import HeraldWire

/// Finds the keys subscribed to patterns matching a name without scanning every subscription.
///
/// Exact patterns live in a hash table keyed by name, which a post's name bytes look up directly. Wildcard patterns
/// are grouped by shape (`WildcardIndex`), so a name costs a lookup per shape of its length, whatever the patterns.
/// Each key's patterns are counted, so the same key may hold the same pattern several times. Empty shapes are
/// removed, so churn leaves nothing behind.
public struct PatternIndex<Key: Hashable> {
    private var exact = NameTable<Subscribers>()

    /// The keys holding one exact pattern: an array to walk per post, and where each key is in it with its
    /// count, so adding and removing stay O(1). (Walking a Dictionary's keys cost ~27 instructions a delivery.)
    private struct Subscribers {
        var keys: [Key] = []
        var slots: [Key: (position: Int, count: Int)] = [:]
        /// Every key's count together: the pattern's occurrences, for `NAMES` `COUNTS` in O(1).
        var total = 0

        mutating func add(_ key: Key) {
            total += 1
            if let slot = slots[key] {
                slots[key] = (slot.position, slot.count + 1)
            } else {
                slots[key] = (keys.count, 1)
                keys.append(key)
            }
        }

        mutating func remove(_ key: Key) {
            guard let slot = slots[key] else { return }
            total -= 1
            if slot.count > 1 {
                slots[key] = (slot.position, slot.count - 1)
                return
            }
            slots[key] = nil
            let last = keys.removeLast()
            if slot.position < keys.count {
                keys[slot.position] = last
                slots[last]!.position = slot.position
            }
        }
    }
    private var wildcards = WildcardIndex<Key>()
    /// The last name `matches(ofName:)` answered and its keys, until a pattern is added or removed: a
    /// session posts to the same few names over and over.
    private var cachedName: NameBuffer?
    private var cachedKeys: [Key] = []
    private var cacheIsValid = false

    public init() {}

    /// Whether no pattern is indexed.
    public var isEmpty: Bool { exact.isEmpty && wildcards.isEmpty }

    /// Adds one occurrence of `pattern` for `key`.
    public mutating func insert(_ pattern: Pattern, for key: Key) {
        cacheIsValid = false
        if pattern.isExact {
            exact.update(pattern.text, default: Subscribers()) { subscribers in
                subscribers.add(key)
                return true
            }
            return
        }
        wildcards.insert(pattern, for: key)
    }

    /// Removes one occurrence of `pattern` for `key`; a pattern not present is a no-op.
    public mutating func remove(_ pattern: Pattern, for key: Key) {
        cacheIsValid = false
        if pattern.isExact {
            exact.update(pattern.text, default: Subscribers()) { subscribers in
                subscribers.remove(key)
                return !subscribers.keys.isEmpty
            }
            return
        }
        wildcards.remove(pattern, for: key)
    }

    /// Calls `body` for every key with a pattern matching `name`: once for its exact pattern and once for its
    /// wildcard patterns, however many match (callers that want each key once deduplicate).
    public func forEachMatch(of name: String, _ body: (Key) -> Void) {
        if let subscribers = exact.value(for: name) {
            for key in subscribers.keys { body(key) }
        }
        guard !wildcards.isEmpty else { return }
        var name = name
        _ = name.withUTF8 { wildcards.forEachMatch(ofName: UnsafeRawBufferPointer($0), body) }
    }

    /// `forEachMatch(of:_:)` for the name whose UTF-8 bytes are `name`, found from the bytes themselves.
    public func forEachMatch(ofName name: UnsafeRawBufferPointer, _ body: (Key) -> Void) {
        _ = visitMatches(ofName: name, body)
    }

    /// `forEachMatch(ofName:_:)`, returning the work its wildcard patterns took (`WildcardIndex.forEachMatch`).
    private func visitMatches(ofName name: UnsafeRawBufferPointer, _ body: (Key) -> Void) -> Int {
        if let subscribers = exact.value(forName: name) {
            for key in subscribers.keys { body(key) }
        }
        guard !wildcards.isEmpty else { return 0 }
        return wildcards.forEachMatch(ofName: name, body)
    }

    /// The keys `forEachMatch(ofName:_:)` reports for `name`, remembered for the next call with the same name
    /// (until a pattern is added or removed), which then costs one comparison of the bytes.
    public mutating func matches(ofName name: UnsafeRawBufferPointer) -> [Key] {
        if cacheIsValid, let cached = cachedName, cached.holds(name) { return cachedKeys }
        if !wildcards.isEmpty {
            var keys: [Key] = []
            swap(&keys, &cachedKeys)
            keys.removeAll(keepingCapacity: true)
            matchingWork &+= visitMatches(ofName: name) { keys.append($0) }
            cachedKeys = keys
        } else {
            // Only exact patterns: the answer is the name's own key list, shared rather than copied (emptying and
            // refilling a list was ~120 instructions of every post to a new name).
            cachedKeys = exact.value(forName: name)?.keys ?? []
        }
        if name.count <= NameBuffer.capacity {
            if !isKnownUniquelyReferenced(&cachedName) { cachedName = NameBuffer() }
            cachedName!.store(name)
            cacheIsValid = true
        }
        return cachedKeys
    }

    /// How many occurrences of patterns matching the name whose UTF-8 bytes are `name` are indexed, over every key:
    /// a key holding two matching patterns, or one pattern twice, counts twice (what `NAMES` `COUNTS` reports).
    ///
    /// The lookup is a post's (`forEachMatch(ofName:_:)`: the exact table, then a lookup per wildcard shape of the
    /// name's length), minus delivery; each pattern found adds its occurrences, kept as a total, so the cost does not
    /// grow with the keys holding it.
    public func subscriptionCount(ofName name: UnsafeRawBufferPointer) -> Int {
        let exactCount = exact.value(forName: name)?.total ?? 0
        guard !wildcards.isEmpty else { return exactCount }
        return exactCount + wildcards.subscriptionCount(ofName: name)
    }

    /// The work of matching wildcard patterns in `matches(ofName:)` since the index was made (shape lookups, `*`
    /// subtractions, pattern checks), for tests that bound it.
    private(set) var matchingWork = 0

    /// Every exact pattern (a plain name) with at least one key.
    public var exactNames: [String] { exact.names }

    /// How many exact patterns have at least one key: `exactNames.count`, in O(1).
    public var exactNameCount: Int { exact.count }

    /// The wildcard shapes and patterns in use, for tests that check removal leaves nothing behind.
    public var nodeCount: Int { wildcards.footprint }
}

/// Room for one name's bytes, for `PatternIndex`'s last-name cache: filled in place, so a miss allocates
/// nothing.
final class NameBuffer {
    static let capacity = Limits.maxNameBytes
    private let base = UnsafeMutableRawPointer.allocate(byteCount: NameBuffer.capacity, alignment: 8)
    private var count = 0

    deinit {
        base.deallocate()
    }

    func holds(_ name: UnsafeRawBufferPointer) -> Bool {
        count == name.count && (count == 0 || Bytes.equal(UnsafeRawPointer(base), name.baseAddress!, count: count))
    }

    func store(_ name: UnsafeRawBufferPointer) {
        if !name.isEmpty { base.copyMemory(from: name.baseAddress!, byteCount: name.count) }
        count = name.count
    }
}
