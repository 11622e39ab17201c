/// The last `capacity` keys seen, to drop a message seen before: a QoS 1 message sent again, a retained message
/// replayed on a new subscription, a post matched by two export patterns.
public struct RecentSet<Key: Hashable & Sendable>: Sendable {
    public let capacity: Int
    private var keys: Set<Key> = []
    private var order: [Key] = []
    private var head = 0

    /// Creates an empty set.
    public init(capacity: Int) {
        precondition(capacity >= 1, "a recent set holds at least one key")
        self.capacity = capacity
    }

    /// Adds `key`.
    ///
    /// - Returns: false when it was seen already (and is still among the last `capacity`).
    public mutating func insert(_ key: Key) -> Bool {
        guard keys.insert(key).inserted else { return false }
        order.append(key)
        if order.count - head > capacity {
            keys.remove(order[head])
            head += 1
            if head > 4096 && head * 2 > order.count {
                order.removeFirst(head)
                head = 0
            }
        }
        return true
    }

    /// Forgets every key.
    public mutating func removeAll() {
        keys.removeAll()
        order.removeAll()
        head = 0
    }
}
