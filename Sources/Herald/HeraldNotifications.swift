/// The notifications of one subscription, from ``Herald/notifications(matching:bufferingPolicy:)``.
///
/// Retained values matching the pattern come first, flagged ``HeraldNotification/isRetained``, then live posts in
/// sequence order with no gap between them. Lost notifications are reported in the stream by a `herald.dropped`
/// notice (``HeraldNotification/notice``). The sequence ends when the connection ends; ``Herald/disconnectReason``
/// says why.
///
/// The subscription is withdrawn (`UNSUBSCRIBE`) when the consuming task is cancelled, or when this value and every
/// iterator made from it are gone. While it lives, it keeps its ``Herald`` open.
///
/// It is a single-consumer sequence, like the `AsyncStream` it wraps: iterate it from one task.
public struct HeraldNotifications: AsyncSequence, Sendable {
    /// A notification.
    public typealias Element = HeraldNotification
    /// Never fails: the sequence ends instead, and ``Herald/disconnectReason`` says why.
    public typealias Failure = Never

    let stream: AsyncStream<HeraldNotification>
    /// Counts what the consumer takes, so the reader knows how full the buffer is.
    let consumed: ConsumptionCounter
    /// Holds the connection open while anyone can still read from it.
    let owner: Herald

    /// Iterates the notifications.
    public struct AsyncIterator: AsyncIteratorProtocol {
        /// A notification.
        public typealias Element = HeraldNotification
        /// Never fails.
        public typealias Failure = Never

        var base: AsyncStream<HeraldNotification>.Iterator
        let consumed: ConsumptionCounter
        let owner: Herald

        /// The next notification, or nil when the connection has ended or the task was cancelled.
        public mutating func next() async -> HeraldNotification? {
            let next = await base.next()
            if next != nil { consumed.took() }
            return next
        }

        /// The next notification, or nil when the connection has ended or the task was cancelled.
        public mutating func next(isolation actor: isolated (any Actor)?) async -> HeraldNotification? {
            let next = await base.next(isolation: actor)
            if next != nil { consumed.took() }
            return next
        }
    }

    /// Makes the iterator; make only one.
    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: stream.makeAsyncIterator(), consumed: consumed, owner: owner)
    }
}
