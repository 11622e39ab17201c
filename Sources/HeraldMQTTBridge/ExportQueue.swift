public import HeraldMQTT

/// The exported messages on their way to the broker: those waiting, bounded with the oldest dropped, and those sent
/// at QoS 1 and not yet acknowledged, which are sent again, with DUP, after a reconnect.
///
/// A pure value: the bridge's loop asks it what to send next and tells it what the broker acknowledged.
public struct ExportQueue: Sendable {
    /// How many messages may wait; past it the oldest waiting one is dropped.
    public let limit: Int
    /// Messages dropped because the queue was full, since the start.
    public private(set) var dropped: UInt64 = 0

    private var waiting: [Packet.Publish] = []
    private var head = 0
    /// Sent at QoS 1 and not acknowledged, in the order they were sent.
    private var inflight: [Packet.Publish] = []
    private var lastIdentifier: UInt16 = 0

    /// Creates an empty queue.
    public init(limit: Int) {
        precondition(limit >= 1, "an export queue holds at least one message")
        self.limit = limit
    }

    /// Messages waiting to be sent.
    public var waitingCount: Int { waiting.count - head }
    /// Messages sent at QoS 1 and not acknowledged.
    public var inflightCount: Int { inflight.count }

    /// Adds a message to send, dropping the oldest waiting one if the queue is full.
    ///
    /// - Returns: whether a message was dropped.
    @discardableResult
    public mutating func enqueue(_ message: Packet.Publish) -> Bool {
        var droppedOne = false
        if waitingCount >= limit {
            head += 1
            dropped += 1
            droppedOne = true
        }
        waiting.append(message)
        if head > 1024 && head * 2 > waiting.count {
            waiting.removeFirst(head)
            head = 0
        }
        return droppedOne
    }

    /// The next message to send, with a packet identifier if it goes at QoS 1; nil when none waits or `maxInflight`
    /// QoS 1 messages await their PUBACK.
    public mutating func next(maxInflight: Int) -> Packet.Publish? {
        guard head < waiting.count else { return nil }
        if waiting[head].qos != .atMostOnce {
            guard inflight.count < maxInflight else { return nil }
        }
        var message = waiting[head]
        head += 1
        if head == waiting.count {
            waiting.removeAll(keepingCapacity: true)
            head = 0
        }
        if message.qos != .atMostOnce {
            message.packetIdentifier = freeIdentifier()
            inflight.append(message)
        }
        return message
    }

    /// The broker acknowledged `identifier`.
    ///
    /// - Returns: whether it was in flight (a PUBACK for anything else is the broker's mistake, and ignored).
    @discardableResult
    public mutating func acknowledged(_ identifier: UInt16) -> Bool {
        guard let index = inflight.firstIndex(where: { $0.packetIdentifier == identifier }) else { return false }
        inflight.remove(at: index)
        return true
    }

    /// The messages to send again on a new connection, in their order, with DUP set (§4.4).
    public func resends() -> [Packet.Publish] {
        inflight.map { message in
            var again = message
            again.dup = true
            return again
        }
    }

    private mutating func freeIdentifier() -> UInt16 {
        repeat {
            lastIdentifier = lastIdentifier == .max ? 1 : lastIdentifier + 1
        } while inflight.contains(where: { $0.packetIdentifier == lastIdentifier })
        return lastIdentifier
    }
}
