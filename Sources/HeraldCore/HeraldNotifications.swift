/// The notifications of one subscription, from `Herald.notifications(matching:)`, of one pattern or several.
///
/// Retained values matching the pattern come first, flagged ``HeraldNotification/isRetained``, then live posts in
/// sequence order with no gap between them; with several patterns, pattern by pattern, and each post once. Lost
/// notifications are reported in the stream by a `herald.dropped` notice (``HeraldNotification/notice``). The
/// sequence ends when the connection ends for good; ``endReason`` says why.
///
/// The subscription is withdrawn (an `UNSUBSCRIBE` per pattern) when the consuming task is cancelled, or when this
/// value and every iterator made from it are gone. While it lives, it keeps its ``Herald`` open.
///
/// It is a single-consumer sequence, like the `AsyncStream` it wraps: iterate it from one task.
public struct HeraldNotifications: AsyncSequence, Sendable {
    /// A notification.
    public typealias Element = HeraldNotification
    /// Never fails: the sequence ends instead, and ``Herald/disconnectReason`` says why.
    public typealias Failure = Never

    let lifetime: BufferLifetime
    /// Counts what the consumer takes, so the reader knows how full the buffer is.
    let consumed: ConsumptionCounter
    /// Holds the connection open while anyone can still read from it.
    let owner: Herald

    init(buffer: NotificationBuffer, consumed: ConsumptionCounter, owner: Herald) {
        self.lifetime = BufferLifetime(buffer)
        self.consumed = consumed
        self.owner = owner
    }

    /// Iterates the notifications.
    public struct AsyncIterator: AsyncIteratorProtocol {
        /// A notification.
        public typealias Element = HeraldNotification
        /// Never fails.
        public typealias Failure = Never

        let lifetime: BufferLifetime
        let consumed: ConsumptionCounter
        let owner: Herald
        /// What the last take brought, not yet handed out, in reverse order: the next notification is the last
        /// element. Handed out one by one without touching a lock.
        ///
        /// Reversed so that each is moved out with `popLast()`: reading `batch[index]` copied it, a retain of the read
        /// it points into, and freeing the batch released it again, two atomic operations per notification on top of
        /// the consumer's own. Reversing a batch moves its elements once, without touching their counts.
        @usableFromInline var batch: [HeraldNotification] = []

        init(lifetime: BufferLifetime, consumed: ConsumptionCounter, owner: Herald) {
            self.lifetime = lifetime
            self.consumed = consumed
            self.owner = owner
        }

        /// The next notification, or nil when the connection has ended or the task was cancelled.
        public mutating func next() async -> HeraldNotification? {
            if let next = batch.popLast() { return next }
            return await nextBatch(isolation: nil)
        }

        /// The next notification, or nil when the connection has ended or the task was cancelled.
        ///
        /// Inlinable so that handing out the rest of a batch compiles into the caller's loop: called across the
        /// module boundary, every call was an executor check of the runtime (`swift_task_switch`), a few percent of
        /// a consumer's time at millions of notifications a second.
        @inlinable
        public mutating func next(isolation actor: isolated (any Actor)?) async -> HeraldNotification? {
            if let next = batch.popLast() { return next }
            return await nextBatch(isolation: actor)
        }

        /// Waits for the next batch and starts handing it out.
        @usableFromInline
        mutating func nextBatch(isolation actor: isolated (any Actor)?) async -> HeraldNotification? {
            // The batch handed out is empty now: its storage goes back to the stream for a later batch.
            var used: [HeraldNotification] = []
            swap(&used, &batch)
            guard var taken = await lifetime.buffer.take(recycling: consume used), !taken.isEmpty else { return nil }
            consumed.took(taken.count)
            // Through the buffer, whose swapAt moves elements: Array's own reverse() copies them, a retain and a
            // release each.
            taken.withUnsafeMutableBufferPointer { $0.reverse() }
            let first = taken.removeLast()
            batch = taken
            return first
        }
    }

    /// Why the sequence ended, once it has: the connection ended and was not reconnected (the Herald was closed or
    /// released, or the daemon refused it), or a reconnection's daemon refused this subscription. Nil while the
    /// sequence goes on (reconnecting included), and when its own consumer ended it (cancelled, or released).
    public var endReason: HeraldError? { lifetime.buffer.endReason }

    /// Makes the iterator; make only one.
    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(lifetime: lifetime, consumed: consumed, owner: owner)
    }
}
