import Foundation
import Herald
import HeraldTestSupport
import HeraldWire
import Testing

/// Issue 3, point 7: with no overflow, every acknowledged subscription receives every matching post made after the
/// acknowledgement, exactly once and in post order, checked by sequence numbers.
struct ReliabilityOrderingTests {
    @Test func manyPublishersAndSubscribersLoseNothingAndKeepPostOrder() async throws {
        let daemon = try await TestDaemon.start(arguments: ["--log-level", "notice"])
        let patterns = ["load.**", "load.0.*", "load.*.3", "load.1.2", "*.2.*", "load.*.*"]
        var subscribers: [(Pattern, HeraldNotifications, Herald)] = []
        for pattern in patterns {
            let herald = try await Herald.connect(socketPath: daemon.socketPath)
            subscribers.append(
                (
                    try Pattern(pattern),
                    try await herald.notifications(matching: pattern, bufferingPolicy: .unbounded), herald
                )
            )
        }
        // The ground truth: a monitor sees every post.
        let monitorHerald = try await Herald.connect(socketPath: daemon.socketPath)
        let everything = try await monitorHerald.monitor(bufferingPolicy: .unbounded)

        let publishers = 4
        let perPublisher = 2500
        try await withThrowingTaskGroup(of: Void.self) { group in
            for publisher in 0..<publishers {
                group.addTask {
                    let herald = try await Herald.connect(socketPath: daemon.socketPath)
                    for index in 0..<perPublisher {
                        try await herald.post("load.\(publisher).\(index % 5)", payload: [UInt8(index % 256)])
                    }
                    try await herald.flush()
                    await herald.close()
                }
            }
            try await group.waitForAll()
        }
        let total = publishers * perPublisher
        let truth = await collect(total, from: everything)
        #expect(truth.count == total)
        #expect(zip(truth, truth.dropFirst()).allSatisfy { $0.sequence < $1.sequence })
        for (pattern, notifications, _) in subscribers {
            let expected = truth.filter { pattern.matches($0.name) }.map(\.sequence)
            let received = await collect(expected.count, from: notifications).map(\.sequence)
            #expect(received == expected, "\(pattern): \(received.count) received, \(expected.count) expected")
        }
        withExtendedLifetime(subscribers) {}
    }

    private func collect(_ count: Int, from notifications: HeraldNotifications) async -> [HeraldNotification] {
        await withTaskGroup(of: [HeraldNotification]?.self) { group in
            group.addTask {
                var taken: [HeraldNotification] = []
                guard count > 0 else { return taken }
                for await notification in notifications where notification.notice == nil {
                    taken.append(notification)
                    if taken.count == count { break }
                }
                return taken
            }
            group.addTask {
                try? await Task.sleep(for: .seconds(60))
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first ?? []
        }
    }
}
