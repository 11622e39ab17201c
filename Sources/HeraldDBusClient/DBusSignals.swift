public import HeraldDBus

/// The signals of one subscription, in arrival order; see ``DBusClient/signals(matching:bufferSize:)``.
public struct DBusSignals: AsyncSequence, Sendable {
    public typealias Element = DBusMessage

    let stream: AsyncStream<DBusMessage>
    let box: SubscriptionBox

    /// How many signals were dropped because the consumer fell behind by more than the buffer.
    public var droppedCount: Int { box.drops.load(ordering: .relaxed) }

    /// The rule this subscription asked the bus for.
    public var rule: MatchRule { box.rule }

    /// An iterator over the signals.
    public struct AsyncIterator: AsyncIteratorProtocol {
        var base: AsyncStream<DBusMessage>.AsyncIterator

        public mutating func next() async -> DBusMessage? {
            await base.next()
        }

        public mutating func next(isolation actor: isolated (any Actor)?) async -> DBusMessage? {
            await base.next(isolation: actor)
        }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: stream.makeAsyncIterator())
    }
}
