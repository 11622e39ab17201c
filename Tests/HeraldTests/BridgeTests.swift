import Foundation
import HeraldTestSupport
import Testing

@testable import Herald
@testable import HeraldCore

/// `NotificationCenter.notifications(named:object:)` and `HeraldBridge`, against a private center and a real
/// heraldd.
struct BridgeTests {
    /// Waits until `condition` holds, polling every 10 ms, for at most `timeout`.
    private func eventually(timeout: Duration = .seconds(10), _ condition: () -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return condition()
    }

    // MARK: notifications(named:object:)

    @Test func notificationsAreLiveOnReturnAndArriveInOrder() async throws {
        let center = NotificationCenter()
        let name = Notification.Name("test.ordered")
        let notifications = center.notifications(named: name)
        for index in 0..<3 { center.post(name: name, object: nil, userInfo: ["index": index]) }
        var iterator = notifications.makeAsyncIterator()
        for index in 0..<3 {
            let notification = await iterator.next()
            #expect(notification?.userInfo?["index"] as? Int == index)
        }
    }

    @Test func notificationsFilterByObject() async throws {
        let center = NotificationCenter()
        let name = Notification.Name("test.object")
        let mine = NSObject()
        let notifications = center.notifications(named: name, object: mine)
        center.post(name: name, object: NSObject(), userInfo: ["which": "other"])
        center.post(name: name, object: mine, userInfo: ["which": "mine"])
        var iterator = notifications.makeAsyncIterator()
        #expect(await iterator.next()?.userInfo?["which"] as? String == "mine")
    }

    @Test func cancellingTheConsumerRemovesTheObserver() async throws {
        let center = NotificationCenter()
        let name = Notification.Name("test.cancel")
        let notifications = center.notifications(named: name)
        #expect(notifications.isObserving)
        let consumer = Task {
            var count = 0
            for await _ in notifications { count += 1 }
            return count
        }
        center.post(name: name, object: nil)
        #expect(await eventually { notifications.isObserving })
        consumer.cancel()
        _ = await consumer.value
        #expect(!notifications.isObserving)
    }

    @Test func releasingTheSequenceRemovesTheObserver() async throws {
        let center = NotificationCenter()
        weak var released: NotificationCenter.Notifications?
        var observed: Bool
        do {
            let notifications = center.notifications(named: Notification.Name("test.release"))
            released = notifications
            observed = notifications.isObserving
        }
        #expect(observed)
        #expect(released == nil)
    }

    // MARK: HeraldBridge with a real daemon

    @Test func importsHeraldNotificationsIntoTheCenter() async throws {
        try await withDaemon { daemon in
            let center = NotificationCenter()
            let herald = try await connect(daemon, name: "bridge")
            let bridge = HeraldBridge(herald: herald, center: center)
            let local = center.notifications(named: Notification.Name("session.willResignActive"))
            try await bridge.importing("session.*")
            let poster = try await connect(daemon, name: "poster")
            try await poster.post("session.willResignActive", userInfo: ["user": "alice", "count": 3, "away": true])
            var iterator = local.makeAsyncIterator()
            let notification = try #require(await iterator.next())
            #expect(notification.userInfo?["user"] as? String == "alice")
            #expect(notification.userInfo?["count"] as? Int == 3)
            #expect(notification.userInfo?["away"] as? Bool == true)
            let original = notification.userInfo?[HeraldBridge.notificationKey] as? HeraldNotification
            #expect(original?.sender.pid == getpid())
            #expect(notification.object as AnyObject? === bridge)
            await bridge.cancel()
            await poster.close()
            await herald.close()
        }
    }

    @Test func exportsLocalPostsInOrderAndNeverReExportsImports() async throws {
        try await withDaemon { daemon in
            let center = NotificationCenter()
            let herald = try await connect(daemon, name: "bridge")
            let bridge = HeraldBridge(herald: herald, center: center)
            let observer = try await connect(daemon, name: "observer")
            let seen = try await observer.notifications(matching: "chat.*")
            let chat = Notification.Name("chat.typing")
            try await bridge.importing("chat.*")
            try bridge.exporting(chat)
            // An import of the exported name: posted locally, never sent back to Herald.
            let other = try await connect(daemon, name: "other")
            try await other.post("chat.typing", userInfo: ["from": "herald"])
            let imported = center.notifications(named: chat)
            var importedIterator = imported.makeAsyncIterator()
            #expect(await importedIterator.next()?.userInfo?["from"] as? String == "herald")
            for index in 0..<3 {
                center.post(name: chat, object: nil, userInfo: ["from": "local", "index": index])
            }
            let received = await collect(4, from: seen)
            #expect(received.map { $0.userInfo?["from"]?.stringValue } == ["herald", "local", "local", "local"])
            #expect(received.dropFirst().map { $0.userInfo?["index"]?.doubleValue } == [0, 1, 2])
            // The exports' echo through this bridge's own import is not posted locally a second time: only the
            // three local posts reach the center after the import.
            for _ in 0..<3 { #expect(await importedIterator.next()?.userInfo?["from"] as? String == "local") }
            try await other.post("chat.typing", userInfo: ["from": "sentinel"])
            #expect(await importedIterator.next()?.userInfo?["from"] as? String == "sentinel")
            await bridge.cancel()
            for client in [herald, observer, other] { await client.close() }
        }
    }

    @Test func cancellingTheBridgeStopsBothDirectionsAndRemovesEveryObserver() async throws {
        try await withDaemon { daemon in
            let center = NotificationCenter()
            let herald = try await connect(daemon, name: "bridge")
            let bridge = HeraldBridge(herald: herald, center: center)
            try await bridge.importing("a.*")
            try bridge.exporting(Notification.Name("b.one"))
            try bridge.exporting(Notification.Name("b.two"))
            #expect(bridge.observerCount == 2)
            await bridge.cancel()
            #expect(bridge.observerCount == 0)
            // The import's UNSUBSCRIBE is on its way; the daemon's count reaches 0.
            var subscriptions = -1
            let deadline = ContinuousClock.now + .seconds(10)
            while ContinuousClock.now < deadline {
                subscriptions = try await herald.status().subscriptions
                if subscriptions == 0 { break }
                try await Task.sleep(for: .milliseconds(10))
            }
            #expect(subscriptions == 0)
            await #expect(throws: HeraldError.self) { try await bridge.importing("c.*") }
            #expect(throws: HeraldError.self) { try bridge.exporting(Notification.Name("c.one")) }
            await herald.close()
        }
    }

    @Test func refusesToExportNamesHeraldCannotCarry() async throws {
        try await withDaemon { daemon in
            let herald = try await connect(daemon)
            let bridge = HeraldBridge(herald: herald, center: NotificationCenter())
            #expect(throws: HeraldError.self) { try bridge.exporting(Notification.Name("NSWindowDidResize..x")) }
            #expect(throws: HeraldError.self) { try bridge.exporting(Notification.Name("herald.dropped")) }
            #expect(bridge.observerCount == 0)
            await herald.close()
        }
    }
}
