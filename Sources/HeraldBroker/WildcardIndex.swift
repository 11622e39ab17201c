import HeraldWire

/// Wildcard patterns grouped by shape, so matching a name costs a lookup per shape rather than a walk of every
/// pattern's segments.
///
/// A pattern's shape is its number of segments before any `**`, whether it ends in `**`, and where its `*` segments
/// are. Within a shape, a pattern is keyed by the sum of a hash of each literal segment with its position. A name
/// then has one key per shape of its length (or shorter, for `**`): the sum of its segments' hashes minus those at
/// the shape's `*` positions, from prefix sums computed once per name. So a name costs one pass over its bytes,
/// then for each applicable shape one subtraction per `*` and one dictionary lookup, then a byte-by-byte check of
/// each pattern found (which a hash collision could make fail, so the answer is always exact).
///
/// Before, a trie over segments was walked along every pattern prefix a name matched: one connection's 1,024
/// patterns of 127 segments mixing literals and `*` made one post visit 130,000 nodes (56 ms; issue 15, case 4),
/// whatever it matched. Now that post costs a lookup per distinct shape, at most one per pattern, with a `*`
/// costing a subtraction; what a connection can register is bounded by `maxPatternCost`.
struct WildcardIndex<Key: Hashable> {
    /// Where a shape's `*` segments are, and how long it is.
    struct Shape: Hashable {
        var segmentCount: Int
        var matchesTrailingSegments: Bool
        var stars: [Int]
    }

    /// One pattern and the keys holding it, each with how many times.
    struct Entry {
        /// The pattern's text, which identifies it.
        let text: String
        let matcher: PatternMatcher
        var keys: [Key: Int]
        /// The sum of `keys`' counts: how many subscriptions hold the pattern.
        var total = 1
    }

    /// Each shape's patterns by key, in the slot `slots` says (more than one in a bucket only on a hash collision);
    /// a slot freed by removal is reused. Kept apart from `shapes` and `patternCounts` so that a post reads each
    /// where it lies, copying nothing.
    private var buckets: [[UInt64: [Entry]]] = []
    private var shapes: [Shape?] = []
    private var patternCounts: [Int] = []
    private var slots: [Shape: Int] = [:]
    private var freeSlots: [Int] = []
    /// The slots in use by length: `exactShapes[n]` for patterns of exactly `n` segments, `trailingShapes` for those
    /// ending in `**`. A post reads these and the slots by position, hashing no shape.
    private var exactShapes: [[Int]] = Array(repeating: [], count: Limits.maxNameBytes / 2 + 2)
    private var trailingShapes: [(slot: Int, segmentCount: Int)] = []
    /// The per-process seed of segment hashes, so that no client can aim for collisions.
    private static var seed: UInt64 {
        var hasher = Hasher()
        hasher.combine(0x6865_7261_6c64 as UInt64)
        return UInt64(truncatingIfNeeded: hasher.finalize())
    }

    private let seed = WildcardIndex.seed

    var isEmpty: Bool { slots.isEmpty }

    /// Shapes and patterns in use, for tests that check removal leaves nothing behind.
    var footprint: Int { patternCounts.reduce(slots.count, +) }

    /// The hash of segment `position` of a name, whose bytes are `bytes`: seeded, and mixed 8 bytes at a time.
    private func segmentHash(_ position: Int, _ bytes: UnsafeRawBufferPointer) -> UInt64 {
        var hash = seed ^ (UInt64(position) &+ 1) &* 0x9E37_79B9_7F4A_7C15
        var offset = 0
        while offset + 8 <= bytes.count {
            hash = (hash ^ bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)) &* 0xBF58_476D_1CE4_E5B9
            hash ^= hash >> 29
            offset += 8
        }
        var tail: UInt64 = UInt64(bytes.count) << 56
        var shift: UInt64 = 0
        while offset < bytes.count {
            tail |= UInt64(bytes[offset]) << shift
            shift += 8
            offset += 1
        }
        hash = (hash ^ tail) &* 0x94D0_49BB_1331_11EB
        return hash ^ (hash >> 31)
    }

    private static func shape(of pattern: Pattern) -> Shape {
        var stars: [Int] = []
        for (position, segment) in pattern.segments.enumerated() where segment == .any { stars.append(position) }
        return Shape(
            segmentCount: pattern.segments.count,
            matchesTrailingSegments: pattern.matchesTrailingSegments,
            stars: stars
        )
    }

    /// The key of a pattern within its shape: the sum of its literal segments' hashes.
    private func key(of pattern: Pattern) -> UInt64 {
        var sum: UInt64 = 0
        for (position, segment) in pattern.segments.enumerated() {
            guard case .literal(let literal) = segment else { continue }
            var text = literal
            sum &+= text.withUTF8 { segmentHash(position, UnsafeRawBufferPointer($0)) }
        }
        return sum
    }

    /// Adds one occurrence of the wildcard pattern `pattern` for `key`.
    mutating func insert(_ pattern: Pattern, for key: Key) {
        let shape = Self.shape(of: pattern)
        let hash = self.key(of: pattern)
        let slot: Int
        if let existing = slots[shape] {
            slot = existing
        } else {
            if let free = freeSlots.popLast() {
                slot = free
                shapes[slot] = shape
            } else {
                slot = shapes.count
                shapes.append(shape)
                buckets.append([:])
                patternCounts.append(0)
            }
            slots[shape] = slot
            if shape.matchesTrailingSegments {
                trailingShapes.append((slot, shape.segmentCount))
            } else {
                exactShapes[shape.segmentCount].append(slot)
            }
        }
        // Taken out and put back, so that nothing is copied on write.
        var bucket = buckets[slot].removeValue(forKey: hash) ?? []
        if let index = bucket.firstIndex(where: { $0.text == pattern.text }) {
            bucket[index].keys[key, default: 0] += 1
            bucket[index].total += 1
        } else {
            bucket.append(Entry(text: pattern.text, matcher: PatternMatcher(pattern), keys: [key: 1]))
            patternCounts[slot] += 1
        }
        buckets[slot][hash] = bucket
    }

    /// Removes one occurrence of the wildcard pattern `pattern` for `key`; a pattern not present is a no-op.
    mutating func remove(_ pattern: Pattern, for key: Key) {
        let shape = Self.shape(of: pattern)
        let hash = self.key(of: pattern)
        guard let slot = slots[shape], var bucket = buckets[slot][hash],
            let index = bucket.firstIndex(where: { $0.text == pattern.text }),
            let count = bucket[index].keys[key]
        else { return }
        bucket[index].keys[key] = count > 1 ? count - 1 : nil
        bucket[index].total -= 1
        if bucket[index].keys.isEmpty {
            bucket.remove(at: index)
            patternCounts[slot] -= 1
        }
        buckets[slot][hash] = bucket.isEmpty ? nil : bucket
        if patternCounts[slot] == 0 {
            shapes[slot] = nil
            buckets[slot] = [:]
            slots[shape] = nil
            freeSlots.append(slot)
            if shape.matchesTrailingSegments {
                trailingShapes.removeAll { $0.slot == slot }
            } else {
                exactShapes[shape.segmentCount].removeAll { $0 == slot }
            }
        }
    }

    /// Calls `body` once for every key with a pattern matching the valid name whose bytes are `name`; returns the work
    /// done (shape lookups, `*` subtractions, pattern checks).
    ///
    /// A pattern whose keys were all reported already is not checked: one connection's many matching patterns cost
    /// one check, not one each.
    func forEachMatch(ofName name: UnsafeRawBufferPointer, _ body: (Key) -> Void) -> Int {
        var work = 0
        // The keys reported so far: the first few in a list, the rest in a set, which most posts never allocate.
        var few: (Key?, Key?, Key?, Key?) = (nil, nil, nil, nil)
        var fewCount = 0
        var more = Set<Key>()
        func wasReported(_ key: Key) -> Bool {
            if fewCount > 0 && few.0 == key { return true }
            if fewCount > 1 && few.1 == key { return true }
            if fewCount > 2 && few.2 == key { return true }
            if fewCount > 3 && few.3 == key { return true }
            return fewCount > 4 && more.contains(key)
        }
        func report(_ key: Key) {
            guard !wasReported(key) else { return }
            switch fewCount {
            case 0: few.0 = key
            case 1: few.1 = key
            case 2: few.2 = key
            case 3: few.3 = key
            default: more.insert(key)
            }
            fewCount += 1
            body(key)
        }
        forEachShapeKey(ofName: name) { slot, key, stars in
            work += 1 + stars
            guard let bucket = buckets[slot][key] else { return }
            bucket.withUnsafeBufferPointer { entries in
                for index in entries.indices {
                    if fewCount > 0 && entries[index].keys.keys.allSatisfy(wasReported) { continue }
                    work += 1
                    guard entries[index].matcher.matches(name) else { continue }
                    for key in entries[index].keys.keys { report(key) }
                }
            }
        }
        return work
    }

    /// How many occurrences of wildcard patterns matching the valid name whose bytes are `name` are held, over every
    /// key, none deduplicated: `forEachMatch(ofName:_:)`'s lookup (a shape lookup per applicable shape, a check per
    /// pattern found), for `NAMES` `COUNTS`.
    func subscriptionCount(ofName name: UnsafeRawBufferPointer) -> Int {
        var total = 0
        forEachShapeKey(ofName: name) { slot, key, _ in
            guard let bucket = buckets[slot][key] else { return }
            for entry in bucket where entry.matcher.matches(name) { total += entry.total }
        }
        return total
    }

    /// Calls `body(slot, key, stars)` for every shape that applies to the valid name whose bytes are `name`: the
    /// shapes of exactly its segment count, then the trailing-`**` shapes of fewer segments. `key` is the bucket key
    /// the name has under that shape (the sum of its segments' hashes, less those at the shape's `*` positions), and
    /// `stars` the number of those positions. Hashes nothing when no shape applies to a name of this length.
    ///
    /// The one walk over a name's segments that a post (`forEachMatch`) and `NAMES` `COUNTS` (`subscriptionCount`)
    /// share; always inlined, so the post path's instructions are those of a loop written in place.
    @inline(__always)
    private func forEachShapeKey(
        ofName name: UnsafeRawBufferPointer,
        _ body: (_ slot: Int, _ key: UInt64, _ stars: Int) -> Void
    ) {
        var segments = 1
        for byte in name where byte == UInt8(ascii: ".") { segments += 1 }
        guard
            (segments < exactShapes.count && !exactShapes[segments].isEmpty)
                || trailingShapes.contains(where: { $0.segmentCount < segments })
        else { return }
        // A valid name of at most 255 bytes has at most 128 segments.
        withUnsafeTemporaryAllocation(of: UInt64.self, capacity: 130) { sums in
            withUnsafeTemporaryAllocation(of: UInt64.self, capacity: 130) { hashes in
                // sums[i]: the sum of the hashes of segments 0 ..< i.
                var count = 0
                var start = 0
                sums[0] = 0
                while true {
                    var end = start
                    while end < name.count && name[end] != UInt8(ascii: ".") { end += 1 }
                    let hash = segmentHash(count, UnsafeRawBufferPointer(rebasing: name[start..<end]))
                    hashes[count] = hash
                    sums[count + 1] = sums[count] &+ hash
                    count += 1
                    if end >= name.count || count == 129 { break }
                    start = end + 1
                }
                func look(_ slot: Int) {
                    var key: UInt64 = 0
                    var stars = 0
                    shapes.withUnsafeBufferPointer { shapes in
                        let shape = shapes[slot]!
                        key = sums[shape.segmentCount]
                        for star in shape.stars { key &-= hashes[star] }
                        stars = shape.stars.count
                    }
                    body(slot, key, stars)
                }
                if count < exactShapes.count {
                    for slot in exactShapes[count] { look(slot) }
                }
                for shape in trailingShapes where shape.segmentCount < count { look(shape.slot) }
            }
        }
    }
}
