/// A timer scheduled on an ``EventLoop``, for ``EventLoop/cancel(_:)``.
public struct TimerID: Hashable, Sendable {
    /// Which timer of its loop it is, counting from 1; never reused.
    public let rawValue: UInt64

    @usableFromInline
    init(rawValue: UInt64) {
        self.rawValue = rawValue
    }
}

/// The event loop's one deadline structure: a binary min-heap of deadlines, with cancellation by identity.
///
/// Scheduling and taking the earliest are O(log n); cancelling is O(1) (the heap entry goes stale and is skipped when
/// it reaches the top). Stale entries are compacted away once they outnumber the live timers, so memory stays
/// proportional to the timers scheduled. Timers with equal deadlines fire in the order they were scheduled.
@usableFromInline
struct TimerQueue<Handler> {
    @usableFromInline
    struct Entry {
        @usableFromInline var deadline: UInt64
        @usableFromInline var id: UInt64

        @usableFromInline
        init(deadline: UInt64, id: UInt64) {
            self.deadline = deadline
            self.id = id
        }
    }

    @usableFromInline var heap: [Entry] = []
    /// The live timers' handlers; a heap entry whose id is not here was cancelled.
    @usableFromInline var live: [UInt64: Handler] = [:]
    @usableFromInline var lastID: UInt64 = 0

    @usableFromInline
    init() {}

    @inlinable var isEmpty: Bool { live.isEmpty }
    @inlinable var count: Int { live.count }

    @inlinable
    mutating func schedule(_ handler: Handler, at deadline: UInt64) -> TimerID {
        lastID += 1
        live[lastID] = handler
        push(Entry(deadline: deadline, id: lastID))
        if heap.count > 2 * live.count + 64 { compact() }
        return TimerID(rawValue: lastID)
    }

    @inlinable
    mutating func cancel(_ timer: TimerID) {
        live[timer.rawValue] = nil
        if live.isEmpty { heap.removeAll(keepingCapacity: true) }
    }

    /// The earliest live deadline, after dropping the stale entries above it.
    @inlinable
    var nextDeadline: UInt64? {
        mutating get {
            dropStale()
            return heap.first?.deadline
        }
    }

    /// Removes and returns the earliest timer's handler if it is due at `now`.
    @inlinable
    mutating func takeDue(now: UInt64) -> Handler? {
        dropStale()
        guard let top = heap.first, top.deadline <= now else { return nil }
        popTop()
        return live.removeValue(forKey: top.id)
    }

    @inlinable
    mutating func dropStale() {
        while let top = heap.first, live[top.id] == nil { popTop() }
    }

    @inlinable
    static func precedes(_ a: Entry, _ b: Entry) -> Bool {
        a.deadline < b.deadline || (a.deadline == b.deadline && a.id < b.id)
    }

    @inlinable
    mutating func push(_ entry: Entry) {
        heap.append(entry)
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard Self.precedes(heap[child], heap[parent]) else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    @inlinable
    mutating func popTop() {
        let last = heap.removeLast()
        guard !heap.isEmpty else { return }
        heap[0] = last
        siftDown(from: 0)
    }

    @inlinable
    mutating func siftDown(from start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            guard left < heap.count else { return }
            var smallest = left
            if left + 1 < heap.count, Self.precedes(heap[left + 1], heap[left]) { smallest = left + 1 }
            guard Self.precedes(heap[smallest], heap[parent]) else { return }
            heap.swapAt(smallest, parent)
            parent = smallest
        }
    }

    /// Keeps only the live entries and rebuilds the heap: O(n), amortised over the cancellations that made them.
    @inlinable
    mutating func compact() {
        heap.removeAll { live[$0.id] == nil }
        var index = heap.count / 2
        while index > 0 {
            index -= 1
            siftDown(from: index)
        }
    }
}
