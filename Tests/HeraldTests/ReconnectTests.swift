import Foundation
import Herald
import HeraldTestSupport
import Testing

/// Issue 3, "Daemon restart": the library reconnects by itself and tells the consumer.
struct ReconnectTests {
    /// Takes notifications until one satisfies `condition`, or the timeout; returns everything taken.
    private func take(
        from notifications: HeraldNotifications,
        until condition: @escaping @Sendable (HeraldNotification) -> Bool,
        timeout: Duration = .seconds(20)
    ) async -> [HeraldNotification] {
        await withTaskGroup(of: [HeraldNotification]?.self) { group in
            group.addTask {
                var taken: [HeraldNotification] = []
                for await notification in notifications {
                    taken.append(notification)
                    if condition(notification) { break }
                }
                return taken
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first ?? []
        }
    }

    @Test func reconnectsAfterSIGKILLResubscribesAndSaysSo() async throws {
        let directory = TemporaryDirectory()
        let first = try await TestDaemon.start(directory: directory)
        let herald = try await connect(first)
        let notifications = try await herald.notifications(matching: "restart.*")
        try await first.stop(signal: SIGKILL)

        // While heraldd is away, posting fails at once instead of hanging.
        let clock = ContinuousClock()
        let started = clock.now
        let error = await heraldError { try await herald.post("restart.lost") }
        #expect(error?.code == .disconnected)
        #expect(clock.now - started < .seconds(2))

        let second = try await TestDaemon.start(directory: directory)
        let taken = await take(from: notifications) { $0.notice == .reconnected }
        #expect(taken.last?.notice == .reconnected)
        #expect(taken.last?.name == HeraldNotification.reconnectedNoticeName)

        // The subscription is live again on the new daemon.
        let poster = try await connect(second)
        try await poster.postAcknowledged("restart.after", payload: Array("{}".utf8))
        let after = await take(from: notifications) { $0.name == "restart.after" }
        #expect(after.last?.name == "restart.after")
        #expect(herald.isConnected)
        try await herald.post("restart.works.again")
        try await second.stop()
    }

    @Test func replaysRetainedValuesAfterTheReconnectionNotice() async throws {
        let directory = TemporaryDirectory()
        let first = try await TestDaemon.start(directory: directory)
        let herald = try await connect(first)
        let notifications = try await herald.notifications(matching: "state.*")
        try await first.stop(signal: SIGKILL)
        let second = try await TestDaemon.start(directory: directory)
        let poster = try await connect(second)
        try await poster.postAcknowledged("state.now", payload: Array(#"{"v":1}"#.utf8), retain: true)
        // Whether the value arrives replayed or live depends on who wins the race to the new daemon; either way it
        // comes after the notice.
        let taken = await take(from: notifications) { $0.name == "state.now" }
        #expect(taken.map(\.name) == [HeraldNotification.reconnectedNoticeName, "state.now"])
        try await second.stop()
    }

    @Test func closeStopsReconnecting() async throws {
        let directory = TemporaryDirectory()
        let first = try await TestDaemon.start(directory: directory)
        let herald = try await connect(first)
        let notifications = try await herald.notifications(matching: "x")
        try await first.stop(signal: SIGKILL)
        await herald.close()
        #expect(await ends(notifications))
    }
}

/// Wills, monitor, names and overflow policies through the library.
struct ReliabilityFeatureTests {
    @Test func aWillRegisteredOnConnectIsPostedWhenTheConnectionDiesWithoutGoodbye() async throws {
        try await withDaemon { daemon in
            let observer = try await connect(daemon)
            let gone = try await observer.notifications(matching: "presence.*")
            // A raw client registers a will and vanishes without BYE, as a killed process would.
            let client = try WireClient.ready(socketPath: daemon.socketPath)
            try client.registerWill(name: "presence.alice", payload: #"{"state":"gone"}"#, delayMilliseconds: 100)
            try client.vanish()
            let taken = await collect(1, from: gone)
            #expect(taken.first?.name == "presence.alice")
            #expect(taken.first?.userInfo?["state"] == "gone")
        }
    }

    @Test func aWillIsNotPostedAfterClose() async throws {
        try await withDaemon { daemon in
            let observer = try await connect(daemon)
            let notifications = try await observer.notifications(matching: "presence.*")
            let leaving = try await Herald.connect(
                socketPath: daemon.socketPath,
                options: Herald.Options(will: Herald.Will(name: "presence.bob", userInfo: ["state": "gone"]))
            )
            await leaving.close()
            // A marker posted after the close, and after the will's zero delay, arrives first and alone.
            let poster = try await connect(daemon)
            try await poster.flush()
            try await poster.postAcknowledged("presence.marker", payload: Array("{}".utf8))
            let taken = await collect(1, from: notifications)
            #expect(taken.map(\.name) == ["presence.marker"])
        }
    }

    @Test func theOwnerMayMonitorEveryPost() async throws {
        try await withDaemon { daemon in
            let monitor = try await connect(daemon, reconnects: false)
            let everything = try await monitor.monitor()
            let poster = try await connect(daemon)
            try await poster.post("a.b")
            try await poster.post("c")
            #expect(await collect(2, from: everything).map(\.name) == ["a.b", "c"])
            // A monitor is read-only: a post is refused with PERMISSION_DENIED, and the monitor goes on.
            let error = await heraldError { try await monitor.postAcknowledged("not.allowed", payload: []) }
            #expect(error?.code == .refused && error?.wireCode == 14)
            try await monitor.post("not.allowed.either")
            #expect(try await eventually { monitor.refusedPosts == 1 })
            try await poster.post("e")
            #expect(await collect(1, from: everything).map(\.name) == ["e"])
            #expect(monitor.isConnected)
        }
    }

    @Test func listsTheNamesTheDaemonKnows() async throws {
        try await withDaemon { daemon in
            let herald = try await connect(daemon)
            try await herald.postAcknowledged("session.state", payload: Array("{}".utf8), retain: true)
            // Kept in variables: a dropped stream unsubscribes.
            let exact = try await herald.notifications(matching: "session.didBecomeActive")
            let wildcard = try await herald.notifications(matching: "session.*")
            #expect(try await herald.names() == ["session.didBecomeActive", "session.state"])
            withExtendedLifetime((exact, wildcard)) {}
        }
    }
}
