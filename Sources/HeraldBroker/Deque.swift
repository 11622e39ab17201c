/// A double-ended queue on a ring buffer: O(1) append and removal at both ends, no per-element
/// allocation. Internal to the broker; it holds each connection's outgoing frame records.
///
/// The capacity is a power of two, so a position wraps with a mask rather than a division (`%` was
/// ~25 instructions of every append and removal in the daemon's profile).
///
/// The elements are plain values (`BitwiseCopyable`) in memory of the deque's own, shared by copies until one
/// of them changes (copy on write). An array of optionals before cost a bounds check, an optional's tag and an
/// array uniqueness check on every access: `append` was ~60 instructions (callgrind).
@usableFromInline
struct Deque<Element: BitwiseCopyable> {
    /// The ring. Slots outside `head ..< head + count` (modulo the capacity) hold stale values, never read.
    private final class Ring {
        let capacity: Int
        let base: UnsafeMutablePointer<Element>

        init(capacity: Int) {
            self.capacity = capacity
            base = .allocate(capacity: capacity)
        }

        deinit {
            base.deallocate()
        }
    }

    private var ring: Ring?
    private var head = 0
    @usableFromInline private(set) var count = 0
    /// The ordinal of the element at index 0: it rises by one as an element leaves the front and falls by one as one
    /// is prepended, so `firstOrdinal + index` names an element for as long as it is neither removed from the
    /// middle nor moved by one (`CoalesceIndex` remembers frames so).
    private(set) var firstOrdinal = 0

    @inlinable var isEmpty: Bool { count == 0 }

    var first: Element? { count == 0 ? nil : ring!.base[head] }

    /// Where element `index` is; `index` must be in `0 ..< count`.
    private func slot(_ index: Int) -> Int {
        (head &+ index) & (ring!.capacity &- 1)
    }

    subscript(index: Int) -> Element {
        get {
            precondition(index >= 0 && index < count, "Deque index \(index) out of range 0..<\(count)")
            return ring!.base[slot(index)]
        }
        _modify {
            precondition(index >= 0 && index < count, "Deque index \(index) out of range 0..<\(count)")
            makeUnique()
            yield &ring!.base[slot(index)]
        }
    }

    /// Calls `body` with the last element, which it may change in place; one access rather than a read
    /// and then writes through the subscript.
    mutating func withLast<R>(_ body: (inout Element) -> R) -> R {
        precondition(count > 0, "withLast on an empty Deque")
        makeUnique()
        return body(&ring!.base[slot(count &- 1)])
    }

    mutating func append(_ element: Element) {
        reserveOneMore()
        ring!.base[slot(count)] = element
        count += 1
    }

    mutating func prepend(_ element: Element) {
        reserveOneMore()
        head = (head &- 1) & (ring!.capacity &- 1)
        ring!.base[head] = element
        count += 1
        firstOrdinal &-= 1
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
        let element = ring!.base[head]
        // Only indices move: the ring itself is not written, so a shared ring stays shared.
        head = (head &+ 1) & (ring!.capacity &- 1)
        count -= 1
        firstOrdinal &+= 1
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
        ring = nil
        head = 0
        count = 0
    }

    private mutating func swapAt(_ a: Int, _ b: Int) {
        makeUnique()
        let base = ring!.base
        let (i, j) = (slot(a), slot(b))
        (base[i], base[j]) = (base[j], base[i])
    }

    /// Makes sure there is room for one more element in a ring of this deque's own.
    private mutating func reserveOneMore() {
        // Uniqueness first: binding `ring` to a local would hold a second reference.
        if isKnownUniquelyReferenced(&ring) && count < ring!.capacity { return }
        let capacity = ring.map { count < $0.capacity ? $0.capacity : $0.capacity * 2 } ?? 8
        moveToNewRing(capacity: capacity)
    }

    /// Gives this deque a ring of its own before it writes into one that a copy may share.
    private mutating func makeUnique() {
        if !isKnownUniquelyReferenced(&ring), let ring { moveToNewRing(capacity: ring.capacity) }
    }

    /// Copies the elements, in order from index 0, into a new ring of `capacity` slots (a power of two).
    private mutating func moveToNewRing(capacity: Int) {
        let fresh = Ring(capacity: capacity)
        for index in 0..<count {
            (fresh.base + index).initialize(to: ring!.base[slot(index)])
        }
        ring = fresh
        head = 0
    }
}
