/// A double-ended queue on a ring buffer: O(1) append and removal at both ends, no per-element
/// allocation. Internal to the broker; it holds each connection's outgoing frame records.
///
/// The capacity is a power of two, so a position wraps with a mask rather than a division (`%` was
/// ~25 instructions of every append and removal in the daemon's profile).
@usableFromInline
struct Deque<Element> {
    private var storage: [Element?] = []
    private var head = 0
    @usableFromInline private(set) var count = 0

    @inlinable var isEmpty: Bool { count == 0 }

    var first: Element? { count == 0 ? nil : storage[head] }

    /// `storage.count - 1`; valid once storage is allocated (its count is a power of two).
    private var mask: Int { storage.count &- 1 }

    subscript(index: Int) -> Element {
        get {
            precondition(index >= 0 && index < count, "Deque index \(index) out of range 0..<\(count)")
            return storage[(head &+ index) & mask]!
        }
        _modify {
            precondition(index >= 0 && index < count, "Deque index \(index) out of range 0..<\(count)")
            let position = (head &+ index) & mask
            yield &storage[position]!
        }
    }

    /// Calls `body` with the last element, which it may change in place; one access rather than a read
    /// and then writes through the subscript.
    mutating func withLast<R>(_ body: (inout Element) -> R) -> R {
        precondition(count > 0, "withLast on an empty Deque")
        return body(&storage[(head &+ count &- 1) & mask]!)
    }

    mutating func append(_ element: Element) {
        if count == storage.count { grow() }
        storage[(head &+ count) & mask] = element
        count += 1
    }

    mutating func prepend(_ element: Element) {
        if count == storage.count { grow() }
        head = (head &- 1) & mask
        storage[head] = element
        count += 1
    }

    /// Inserts `element` so that it ends up at `index` (0 ... count).
    mutating func insert(_ element: Element, at index: Int) {
        precondition(index >= 0 && index <= count, "Deque insert index \(index) out of range 0...\(count)")
        if index == 0 { return prepend(element) }
        if index == 1 {
            // The queue's notice goes right after the frame in flight: O(1), not a walk from the back.
            let first = removeFirst()
            prepend(element)
            return prepend(first)
        }
        append(element)
        var position = count - 1
        while position > index {
            swapAt(position, position - 1)
            position -= 1
        }
    }

    @discardableResult
    mutating func removeFirst() -> Element {
        precondition(count > 0, "removeFirst on an empty Deque")
        let element = storage[head].take()!
        head = (head &+ 1) & mask
        count -= 1
        return element
    }

    /// Removes the element at `index`, shifting the ones before it; O(index).
    @discardableResult
    mutating func remove(at index: Int) -> Element {
        let element = self[index]
        var position = index
        while position > 0 {
            swapAt(position, position - 1)
            position -= 1
        }
        removeFirst()
        return element
    }

    mutating func removeAll() {
        storage = []
        head = 0
        count = 0
    }

    private mutating func swapAt(_ a: Int, _ b: Int) {
        storage.swapAt((head &+ a) & mask, (head &+ b) & mask)
    }

    private mutating func grow() {
        var grown = [Element?](repeating: nil, count: Swift.max(8, storage.count * 2))
        for index in 0..<count {
            grown[index] = storage[(head &+ index) & mask]
        }
        storage = grown
        head = 0
    }
}
