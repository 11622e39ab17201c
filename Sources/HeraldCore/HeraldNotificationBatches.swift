/// The notifications of one subscription in batches: each element is every notification that was waiting when the
/// consumer asked, in order, from ``HeraldNotifications/batches``.
///
/// ```swift
/// for await batch in try await herald.notifications(matching: "metrics.**").batches {
///     store.insert(contentsOf: batch)
/// }
/// ```
///
/// A consumer that handles notifications in bulk (a database insert, a redraw) gets a whole burst in one element:
/// the reader thread routes a read of the socket into the stream at once, and a batch is what it has routed since the
/// consumer last asked. An element is never empty. Everything else is as for ``HeraldNotifications``: the same order,
/// the same notices for losses, the same end, and the same single consumer: iterate either the notifications or their
/// batches, not both.
public struct HeraldNotificationBatches: AsyncSequence, Sendable {
    /// The notifications waiting at once, in order; never empty.
    public typealias Element = [HeraldNotification]
    /// Never fails: the sequence ends instead, and ``Herald/disconnectReason`` says why.
    public typealias Failure = Never

    let lifetime: BufferLifetime
    let consumed: ConsumptionCounter
    /// Holds the connection open while anyone can still read from it.
    let owner: Herald

    /// Iterates the batches.
    public struct AsyncIterator: AsyncIteratorProtocol {
        /// The notifications waiting at once.
        public typealias Element = [HeraldNotification]
        /// Never fails.
        public typealias Failure = Never

        let lifetime: BufferLifetime
        let consumed: ConsumptionCounter
        let owner: Herald

        /// The next batch, or nil when the connection has ended or the task was cancelled.
        public mutating func next() async -> [HeraldNotification]? {
            await next(isolation: nil)
        }

        /// The next batch, or nil when the connection has ended or the task was cancelled.
        public mutating func next(isolation actor: isolated (any Actor)?) async -> [HeraldNotification]? {
            guard let taken = await lifetime.buffer.take(), !taken.isEmpty else { return nil }
            consumed.took(taken.count)
            return taken
        }
    }

    /// Makes the iterator; make only one.
    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(lifetime: lifetime, consumed: consumed, owner: owner)
    }
}

extension HeraldNotifications {
    /// The same notifications, each element every notification waiting when the consumer asked: one hand-over per
    /// burst rather than one `next()` per notification. Iterate this or the notifications, not both.
    public var batches: HeraldNotificationBatches {
        HeraldNotificationBatches(lifetime: lifetime, consumed: consumed, owner: owner)
    }
}
