import Synchronization

/// Notifications taken from Herald on its reader thread and not yet handled by the bridge's loop: the hand-over
/// between the two, bounded, which wakes the loop once per batch rather than once per notification.
///
/// Waking the loop costs a context switch; under load that was most of the bridge's time (Benchmarks/README.md).
/// Here the reader appends, and only the append that finds the inbox idle asks for a wake-up: everything appended
/// before the loop comes to `take` goes in the same batch. Past `limit` the oldest waiting element is dropped and
/// counted, as the export queue does, so a stalled loop cannot make the inbox grow without bound.
public final class LocalInbox<Element: Sendable>: Sendable {
    private struct State {
        var items: [Element] = []
        var head = 0
        /// A wake-up was asked for and the loop has not taken the batch yet.
        var awake = false
        var dropped: UInt64 = 0
    }

    /// How many elements may wait.
    public let limit: Int
    private let state = Mutex(State())

    /// Creates an empty inbox.
    public init(limit: Int) {
        precondition(limit >= 1, "an inbox holds at least one element")
        self.limit = limit
    }

    /// Adds `element`, dropping the oldest waiting one when `limit` wait already.
    ///
    /// - Returns: whether the caller must wake the loop: true for the first element since the last `take`.
    public func append(_ element: Element) -> Bool {
        state.withLock { state in
            if state.items.count - state.head >= limit {
                state.head += 1
                state.dropped += 1
                if state.head > 1024 && state.head * 2 > state.items.count {
                    state.items.removeFirst(state.head)
                    state.head = 0
                }
            }
            state.items.append(element)
            defer { state.awake = true }
            return !state.awake
        }
    }

    /// Takes every waiting element, in their order; the next `append` asks for a wake-up again.
    public func take() -> [Element] {
        state.withLock { state in
            defer {
                state.items.removeAll(keepingCapacity: true)
                state.head = 0
                state.awake = false
            }
            return state.head == 0 ? state.items : Array(state.items[state.head...])
        }
    }

    /// Elements dropped because the inbox was full, since the start.
    public var dropped: UInt64 { state.withLock { $0.dropped } }
}
