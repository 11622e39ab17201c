import HeraldMQTT
import HeraldMQTTBridge
import Testing

struct ExportQueueTests {
    func message(_ topic: String, qos: QoS = .atLeastOnce) -> Packet.Publish {
        Packet.Publish(topic: topic, payload: [], qos: qos)
    }

    @Test func dropsTheOldestWhenFullAndCountsIt() {
        var queue = ExportQueue(limit: 2)
        let first = queue.enqueue(message("a"))
        let second = queue.enqueue(message("b"))
        let third = queue.enqueue(message("c"))
        #expect(!first && !second && third)
        #expect(queue.dropped == 1)
        let sent = [queue.next(maxInflight: 10), queue.next(maxInflight: 10), queue.next(maxInflight: 10)]
        #expect(sent.map { $0?.topic } == ["b", "c", nil])
    }

    @Test func givesQoS1MessagesDistinctIdentifiersAndHoldsThemUntilAcknowledged() throws {
        var queue = ExportQueue(limit: 10)
        queue.enqueue(message("a"))
        queue.enqueue(message("b"))
        queue.enqueue(message("c", qos: .atMostOnce))
        let sent = [queue.next(maxInflight: 10), queue.next(maxInflight: 10), queue.next(maxInflight: 10)]
        let first = try #require(sent[0])
        let second = try #require(sent[1])
        let third = try #require(sent[2])
        #expect(first.packetIdentifier != 0 && second.packetIdentifier != 0)
        #expect(first.packetIdentifier != second.packetIdentifier)
        #expect(third.packetIdentifier == 0)
        #expect(queue.inflightCount == 2)
        let known = queue.acknowledged(first.packetIdentifier)
        let again = queue.acknowledged(first.packetIdentifier)
        #expect(known && !again)
        #expect(queue.inflightCount == 1)
    }

    @Test func stopsAtTheInflightLimit() {
        var queue = ExportQueue(limit: 10)
        queue.enqueue(message("a"))
        queue.enqueue(message("b"))
        let sent = [queue.next(maxInflight: 1), queue.next(maxInflight: 1)]
        #expect(sent[0] != nil && sent[1] == nil)
        #expect(queue.waitingCount == 1)
    }

    @Test func resendsTheUnacknowledgedInOrderWithDUP() throws {
        var queue = ExportQueue(limit: 10)
        for topic in ["a", "b", "c"] { queue.enqueue(message(topic)) }
        let next = queue.next(maxInflight: 10)
        let a = try #require(next)
        _ = queue.next(maxInflight: 10)
        _ = queue.next(maxInflight: 10)
        queue.acknowledged(a.packetIdentifier)
        let resends = queue.resends()
        #expect(resends.map(\.topic) == ["b", "c"])
        #expect(resends.map(\.dup) == [true, true])
    }

    @Test func keepsTheOrderOfTheUnacknowledgedAcrossOutOfOrderPUBACKsAndIdentifierWrap() throws {
        var queue = ExportQueue(limit: 100_000)
        // One message held from the start while 70,000 go through out of order: the identifiers wrap past 65,535,
        // skipping the one still in flight, and the window's front is dropped now and then behind it.
        queue.enqueue(message("held"))
        let first = queue.next(maxInflight: 100)
        let held = try #require(first)
        var outstanding: [Packet.Publish] = []
        for index in 0..<70_000 {
            queue.enqueue(message("m\(index)"))
            let next = queue.next(maxInflight: 100)
            let sent = try #require(next)
            #expect(sent.packetIdentifier != held.packetIdentifier)
            outstanding.append(sent)
            if outstanding.count == 3 {
                // The second, then the first, then the third: not the order they were sent.
                for position in [1, 0, 2] {
                    let known = queue.acknowledged(outstanding[position].packetIdentifier)
                    #expect(known)
                }
                outstanding = []
            }
        }
        #expect(queue.inflightCount == 1 + outstanding.count)
        #expect(queue.resends().map(\.topic) == ["held"] + outstanding.map(\.topic))
        let known = queue.acknowledged(held.packetIdentifier)
        #expect(known)
        #expect(queue.resends().map(\.topic) == outstanding.map(\.topic))
    }
}

struct RecentSetTests {
    @Test func remembersTheLastKeysOnly() {
        var set = RecentSet<Int>(capacity: 2)
        let inserted = [set.insert(1), set.insert(1), set.insert(2), set.insert(3), set.insert(1), set.insert(3)]
        // The second 1 was seen; after 2 and 3, the first 1 fell out; 3 is still there.
        #expect(inserted == [true, false, true, true, true, false])
    }
}
