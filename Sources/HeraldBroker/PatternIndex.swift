public import HeraldWire

/// Finds the keys subscribed to patterns matching a name without scanning every subscription.
///
/// Exact patterns live in a hash table keyed by name, which a post's name bytes look up directly. Wildcard patterns live in a trie over
/// segments, where a node has literal children, a `*` child, keys whose pattern ends at the node and
/// keys whose pattern ends in `**` after it. Each key's patterns are counted, so the same key may hold
/// the same pattern several times. Empty nodes are pruned, so churn leaves nothing behind.
public struct PatternIndex<Key: Hashable> {
    private struct Node {
        var children: [Substring: Int] = [:]
        var star: Int?
        var terminal: [Key: Int] = [:]
        var trailing: [Key: Int] = [:]

        var isEmpty: Bool { children.isEmpty && star == nil && terminal.isEmpty && trailing.isEmpty }
    }

    private var exact = NameTable<Subscribers>()

    /// The keys holding one exact pattern: an array to walk per post, and where each key is in it with its
    /// count, so adding and removing stay O(1). (Walking a Dictionary's keys cost ~27 instructions a delivery.)
    private struct Subscribers {
        var keys: [Key] = []
        var slots: [Key: (position: Int, count: Int)] = [:]

        mutating func add(_ key: Key) {
            if let slot = slots[key] {
                slots[key] = (slot.position, slot.count + 1)
            } else {
                slots[key] = (keys.count, 1)
                keys.append(key)
            }
        }

        mutating func remove(_ key: Key) {
            guard let slot = slots[key] else { return }
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
    private var nodes: [Node] = [Node()]
    private var freeNodes: [Int] = []
    /// The last name `matches(ofName:)` answered and its keys, until a pattern is added or removed: a
    /// session posts to the same few names over and over.
    private var cachedName: NameBuffer?
    private var cachedKeys: [Key] = []
    private var cacheIsValid = false

    public init() {}

    /// Whether no pattern is indexed.
    public var isEmpty: Bool { exact.isEmpty && nodes[0].isEmpty }

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
        var node = 0
        for segment in pattern.segments {
            switch segment {
            case .literal(let text):
                if let child = nodes[node].children[text[...]] {
                    node = child
                } else {
                    let child = allocateNode()
                    nodes[node].children[text[...]] = child
                    node = child
                }
            case .any:
                if let child = nodes[node].star {
                    node = child
                } else {
                    let child = allocateNode()
                    nodes[node].star = child
                    node = child
                }
            }
        }
        if pattern.matchesTrailingSegments {
            nodes[node].trailing[key, default: 0] += 1
        } else {
            nodes[node].terminal[key, default: 0] += 1
        }
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
        var path: [Int] = [0]
        for segment in pattern.segments {
            let next: Int?
            switch segment {
            case .literal(let text): next = nodes[path.last!].children[text[...]]
            case .any: next = nodes[path.last!].star
            }
            guard let next else { return }
            path.append(next)
        }
        let last = path.last!
        if pattern.matchesTrailingSegments {
            guard let count = nodes[last].trailing[key] else { return }
            nodes[last].trailing[key] = count > 1 ? count - 1 : nil
        } else {
            guard let count = nodes[last].terminal[key] else { return }
            nodes[last].terminal[key] = count > 1 ? count - 1 : nil
        }
        // Prune empty nodes bottom-up.
        var depth = pattern.segments.count
        while depth > 0, nodes[path[depth]].isEmpty {
            let parent = path[depth - 1]
            switch pattern.segments[depth - 1] {
            case .literal(let text): nodes[parent].children[text[...]] = nil
            case .any: nodes[parent].star = nil
            }
            nodes[path[depth]] = Node()
            freeNodes.append(path[depth])
            depth -= 1
        }
    }

    /// Calls `body` for every key with a pattern matching `name`, once per matching pattern (a key
    /// with two matching patterns is reported twice; callers that want each key once deduplicate).
    public func forEachMatch(of name: String, _ body: (Key) -> Void) {
        if let subscribers = exact.value(for: name) {
            for key in subscribers.keys { body(key) }
        }
        guard hasWildcards else { return }
        let segments = name.split(separator: ".", omittingEmptySubsequences: false)
        _ = visit(0, segments[...], body)
    }

    /// `forEachMatch(of:_:)` for the name whose UTF-8 bytes are `name`: exact patterns are found from the bytes
    /// themselves; a `String` is made only when wildcard patterns exist.
    public func forEachMatch(ofName name: UnsafeRawBufferPointer, _ body: (Key) -> Void) {
        _ = visitMatches(ofName: name, body)
    }

    /// `forEachMatch(ofName:_:)`, returning how many trie nodes it visited.
    private func visitMatches(ofName name: UnsafeRawBufferPointer, _ body: (Key) -> Void) -> Int {
        if let subscribers = exact.value(forName: name) {
            for key in subscribers.keys { body(key) }
        }
        guard hasWildcards else { return 0 }
        let segments = String(decoding: name, as: UTF8.self).split(separator: ".", omittingEmptySubsequences: false)
        return visit(0, segments[...], body)
    }

    /// The keys `forEachMatch(ofName:_:)` reports for `name`, remembered for the next call with the same name
    /// (until a pattern is added or removed), which then costs one comparison of the bytes.
    public mutating func matches(ofName name: UnsafeRawBufferPointer) -> [Key] {
        if cacheIsValid, let cached = cachedName, cached.holds(name) { return cachedKeys }
        if hasWildcards {
            var keys: [Key] = []
            swap(&keys, &cachedKeys)
            keys.removeAll(keepingCapacity: true)
            visitedNodes &+= visitMatches(ofName: name) { keys.append($0) }
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

    /// Whether any wildcard pattern is indexed (the trie's root has anything below it).
    private var hasWildcards: Bool {
        nodes[0].children.count > 0 || nodes[0].star != nil || !nodes[0].trailing.isEmpty
    }

    /// Reports the keys at and below node `index` whose patterns match `segments`, and returns how many nodes it
    /// visited: at most the nodes of the patterns' matching prefixes, which `maxPatternCost` bounds per connection.
    // The node is read in place, not copied (a copy retained and released its three tables: ~430 ns of every
    // visit in the debug build, 56 ms a post for one hostile connection's 130,000 nodes).
    private func visit(_ index: Int, _ segments: ArraySlice<Substring>, _ body: (Key) -> Void) -> Int {
        guard let segment = segments.first else {
            if !nodes[index].terminal.isEmpty {
                for key in nodes[index].terminal.keys { body(key) }
            }
            return 1
        }
        if !nodes[index].trailing.isEmpty {
            for key in nodes[index].trailing.keys { body(key) }
        }
        var visited = 1
        let rest = segments.dropFirst()
        if !nodes[index].children.isEmpty, let child = nodes[index].children[segment] {
            visited += visit(child, rest, body)
        }
        if let star = nodes[index].star { visited += visit(star, rest, body) }
        return visited
    }

    /// Trie nodes visited by `matches(ofName:)` since the index was made: the work of matching, for tests.
    private(set) var visitedNodes = 0

    /// Every exact pattern (a plain name) with at least one key.
    public var exactNames: [String] { exact.names }

    /// How many exact patterns have at least one key: `exactNames.count`, in O(1).
    public var exactNameCount: Int { exact.count }

    /// The number of trie nodes in use, for tests that check pruning.
    public var nodeCount: Int { nodes.count - freeNodes.count }

    private mutating func allocateNode() -> Int {
        if let index = freeNodes.popLast() { return index }
        nodes.append(Node())
        return nodes.count - 1
    }
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
