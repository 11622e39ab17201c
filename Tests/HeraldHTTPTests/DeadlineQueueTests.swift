import Testing

@testable import HeraldHTTP

@Suite struct DeadlineQueueTests {
    @Test func frontSkipsStaleEntriesAndKeepsPushOrder() {
        var queue = DeadlineQueue()
        var current: [UInt64: UInt64] = [:]
        for id in UInt64(1)...5 {
            queue.push(id: id, deadline: id * 10)
            current[id] = id * 10
        }
        // 1 closed, 2 re-armed later: both entries are stale now.
        current[1] = nil
        current[2] = 60
        queue.push(id: 2, deadline: 60)
        let isCurrent = { (entry: DeadlineQueue.Entry) in current[entry.id] == entry.deadline }
        var order: [UInt64] = []
        while let entry = queue.front(isCurrent: isCurrent) {
            order.append(entry.id)
            queue.removeFront()
        }
        #expect(order == [3, 4, 5, 2])
        #expect(queue.count == 0)
    }

    @Test func staleEntriesAreCompactedSoMemoryFollowsTheLiveConnections() {
        var queue = DeadlineQueue()
        // One connection re-armed a million times (a kept-alive client making requests) leaves one live entry.
        var deadline: UInt64 = 0
        let isCurrent = { (entry: DeadlineQueue.Entry) in entry.deadline == deadline }
        for _ in 0..<1_000_000 {
            deadline += 1
            queue.push(id: 7, deadline: deadline)
            queue.compactIfSparse(live: 1, isCurrent: isCurrent)
        }
        #expect(queue.count <= 2 * 1 + 64 + 1)
        #expect(queue.front(isCurrent: isCurrent) == DeadlineQueue.Entry(deadline: deadline, id: 7))
    }
}
