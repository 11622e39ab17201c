/// A bounded first-in-first-out store: appending past the capacity forgets the oldest element.
///
/// The room's history is one of these, so memory does not grow with the number of messages ever posted, unlike the
/// book server's ever-growing array.
public struct HistoryRing<Element> {
    /// The most elements kept.
    public let capacity: Int
    private var storage: [Element] = []
    /// Where the oldest element is once the storage is full.
    private var head = 0

    /// Creates an empty ring.
    ///
    /// - Parameter capacity: the most elements kept; at least 1.
    public init(capacity: Int) {
        precondition(capacity >= 1, "a HistoryRing needs a capacity of at least 1, not \(capacity)")
        self.capacity = capacity
        storage.reserveCapacity(min(capacity, 1024))
    }

    /// The number of elements held, at most ``capacity``.
    public var count: Int {
        storage.count
    }

    /// Appends `element`, forgetting the oldest one when the ring is full.
    public mutating func append(_ element: Element) {
        if storage.count < capacity {
            storage.append(element)
        } else {
            storage[head] = element
            head = (head + 1) % capacity
        }
    }

    /// The newest `count` elements (fewer if the ring holds fewer), oldest first.
    public func suffix(_ count: Int) -> [Element] {
        let taken = min(max(count, 0), storage.count)
        return (storage.count - taken..<storage.count).map { storage[(head + $0) % storage.count] }
    }

    /// Every element, oldest first.
    public var elements: [Element] {
        suffix(storage.count)
    }
}

extension HistoryRing: Sendable where Element: Sendable {}
