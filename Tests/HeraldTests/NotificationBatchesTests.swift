import Foundation
import HeraldTestSupport
import Testing

@testable import Herald
@testable import HeraldCore

/// `notifications(matching:).batches` hands over everything waiting at once, in order, with nothing lost.
@Suite struct NotificationBatchesTests {
    @Test func aBurstRoutedBeforeTheConsumerAsksComesAsOneBatchInOrder() async throws {
        try await withDaemon { daemon in
            let subscriber = try await connect(daemon, name: "subscriber")
            let publisher = try await connect(daemon, name: "publisher")
            let count = 500
            let burst = try await subscriber.notifications(matching: "burst.item", bufferingPolicy: .unbounded)
            // On the same connection, so once the reader has routed the marker it has routed the burst before it.
            let marker = try await subscriber.notifications(matching: "burst.end")
            for index in 0..<count {
                try await publisher.post("burst.item", payload: PostCoalescingTests.payload(task: 0, index: index))
            }
            try await publisher.post("burst.end", payload: [])
            #expect(await collect(1, from: marker).count == 1)

            var iterator = burst.batches.makeAsyncIterator()
            let batch = await iterator.next()
            #expect(batch?.count == count)
            #expect(batch?.map { PostCoalescingTests.decode($0).index } == Array(0..<count))
            await publisher.close()
            await subscriber.close()
        }
    }

    @Test func batchesCarryEveryNotificationOfALongRunInOrder() async throws {
        try await withDaemon { daemon in
            let subscriber = try await connect(daemon, name: "subscriber")
            let publisher = try await connect(daemon, name: "publisher")
            let count = 5000
            let stream = try await subscriber.notifications(matching: "run.item", bufferingPolicy: .unbounded)
            let consumer = Task {
                var indices: [Int] = []
                var batches = 0
                for await batch in stream.batches {
                    batches += 1
                    #expect(!batch.isEmpty)
                    indices += batch.map { PostCoalescingTests.decode($0).index }
                    if indices.count >= count { break }
                }
                return (indices, batches)
            }
            // A lost notification would leave the consumer waiting: cancelled, it ends with what it has.
            let watchdog = Task {
                try? await Task.sleep(for: .seconds(30))
                consumer.cancel()
            }
            for index in 0..<count {
                try await publisher.post("run.item", payload: PostCoalescingTests.payload(task: 0, index: index))
            }
            let (indices, batches) = await consumer.value
            watchdog.cancel()
            #expect(indices == Array(0..<count))
            #expect(batches >= 1 && batches <= count)
            await publisher.close()
            await subscriber.close()
        }
    }
}
