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
    /// Sent at QoS 1 and not acknowledged, in the order they were sent; nil where one was acknowledged out of order.
    ///
    /// Acknowledged ones are cleared in place and the head moves past them: removing each from the front of an array
    /// shifted the whole window on every PUBACK (perf: about 4 % of the exporting bridge, a window of 1000).
    private var inflight: [Packet.Publish?] = []
    private var inflightHead = 0
    /// How many entries were removed from the front of `inflight` since the start: an entry's position is its index
    /// plus this.
    private var inflightBase = 0
    /// The position of each message in flight, by packet identifier.
    private var inflightPositions: [UInt16: Int] = [:]
    private var lastIdentifier: UInt16 = 0

    /// Creates an empty queue.
    public init(limit: Int) {
        precondition(limit >= 1, "an export queue holds at least one message")
        self.limit = limit
    }

    /// Messages waiting to be sent.
    public var waitingCount: Int { waiting.count - head }
    /// Messages sent at QoS 1 and not acknowledged.
    public var inflightCount: Int { inflightPositions.count }

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
            guard inflightCount < maxInflight else { return nil }
        }
        var message = waiting[head]
        head += 1
        if head == waiting.count {
            waiting.removeAll(keepingCapacity: true)
            head = 0
        }
        if message.qos != .atMostOnce {
            message.packetIdentifier = freeIdentifier()
            inflightPositions[message.packetIdentifier] = inflightBase + inflight.count
            inflight.append(message)
        }
        return message
    }

    /// The broker acknowledged `identifier`.
    ///
    /// - Returns: whether it was in flight (a PUBACK for anything else is the broker's mistake, and ignored).
    @discardableResult
    public mutating func acknowledged(_ identifier: UInt16) -> Bool {
        guard let position = inflightPositions.removeValue(forKey: identifier) else { return false }
        inflight[position - inflightBase] = nil
        while inflightHead < inflight.count && inflight[inflightHead] == nil { inflightHead += 1 }
        if inflightHead == inflight.count {
            inflightBase += inflight.count
            inflight.removeAll(keepingCapacity: true)
            inflightHead = 0
        } else if inflightHead > 64 && inflightHead * 2 > inflight.count {
            // A PUBACK long outstanding holds the head: drop what lies before it now and then, not on each PUBACK.
            inflightBase += inflightHead
            inflight.removeFirst(inflightHead)
            inflightHead = 0
        }
        return true
    }

    /// The messages to send again on a new connection, in their order, with DUP set (§4.4).
    public func resends() -> [Packet.Publish] {
        inflight[inflightHead...].compactMap { $0 }.map { message in
            var again = message
            again.dup = true
            return again
        }
    }

    private mutating func freeIdentifier() -> UInt16 {
        repeat {
            lastIdentifier = lastIdentifier == .max ? 1 : lastIdentifier + 1
        } while inflightPositions[lastIdentifier] != nil
        return lastIdentifier
    }
}
