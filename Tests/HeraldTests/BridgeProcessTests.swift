import Foundation
import HeraldLaunch
import HeraldTestSupport
import Testing

@testable import Herald
@testable import HeraldCore

/// The bridge across processes: this test process observes and posts through `NotificationCenter.default`, while
/// other real processes (`herald`, the session hook) post and observe through a real heraldd.
@Suite(.serialized)
struct BridgeProcessTests {
    /// A unique marker, since `NotificationCenter.default` is shared with every other test in this process.
    private static func marker() -> String { "m\(UInt64.random(in: 0...UInt64.max))" }

    /// The next local notification of `sequence` whose `userInfo[key]` is `value`, or nil after `timeout`.
    private func next(
        in notifications: NotificationCenter.Notifications,
        where key: String,
        is value: String,
        timeout: Duration = .seconds(20)
    ) async -> Notification? {
        struct Found: @unchecked Sendable {
            // Only read after the task group has finished with it.
            let notification: Notification?
        }
        let found = await withTaskGroup(of: Found.self) { group in
            group.addTask {
                for await notification in notifications where notification.userInfo?[key] as? String == value {
                    return Found(notification: notification)
                }
                return Found(notification: nil)
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return Found(notification: nil)
            }
            let first = await group.next()!
            group.cancelAll()
            return first
        }
        return found.notification
    }

    @Test func aHeraldPostFromAnotherProcessReachesNotificationCenterDefault() async throws {
        let daemon = try await TestDaemon.start()
        let herald = try await Herald.connect(socketPath: daemon.socketPath)
        let bridge = HeraldBridge(herald: herald)
        let local = NotificationCenter.default.notifications(named: Notification.Name("session.willResignActive"))
        try await bridge.importing("session.*")
        let marker = Self.marker()
        let post = try ChildProcess(
            TestBinaries.path("herald"),
            ["post", "session.willResignActive", "user=\(marker)"],
            environment: daemon.environment
        )
        #expect(try await post.waitForExit() == 0)
        let notification = await next(in: local, where: "user", is: marker)
        let original = notification?.userInfo?[HeraldBridge.notificationKey] as? HeraldNotification
        #expect(original?.sender.pid == post.pid)
        await bridge.cancel()
        await herald.close()
    }

    @Test func aLocalPostIsSeenByHeraldObserveInAnotherProcess() async throws {
        let daemon = try await TestDaemon.start()
        let herald = try await Herald.connect(socketPath: daemon.socketPath)
        let bridge = HeraldBridge(herald: herald)
        let name = Notification.Name("bridge.e2e.exported")
        try bridge.exporting(name)
        let observer = try ChildProcess(
            TestBinaries.path("herald"),
            ["observe", "bridge.e2e.*", "--json", "--ready", "--count", "1", "--timeout", "20"],
            environment: daemon.environment
        )
        try await observer.waitForStderrLine(containing: "ready")
        let marker = Self.marker()
        NotificationCenter.default.post(name: name, object: nil, userInfo: ["marker": marker, "n": 1])
        #expect(try await observer.waitForExit() == 0)
        let line = observer.stdoutLines.first ?? ""
        #expect(line.contains(#""name":"bridge.e2e.exported""#))
        #expect(line.contains(#""marker":"\#(marker)""#))
        #expect(line.contains(#""pid":\#(getpid())"#))
        await bridge.cancel()
        await herald.close()
    }

    @Test(.requires("sh", "dbus-daemon", "dbus-monitor", "gdbus"))
    func aDBusScreenLockReachesANotificationCenterObserverInThisProcess() async throws {
        let daemon = try await TestDaemon.start()
        let bus = try await SessionBus.start(socketPath: daemon.directory.file("bus"))
        let marker = Self.marker()
        var environment = daemon.environment
        environment["HERALD"] = TestBinaries.path("herald")
        environment["DBUS_SESSION_BUS_ADDRESS"] = bus.address
        environment["XDG_SESSION_ID"] = nil
        environment["XDG_RUNTIME_DIR"] = daemon.directory.path
        environment["USER"] = marker
        let hook = try ChildProcess(
            try SessionTools.path("sh"),
            [SessionTools.contrib("session/herald-session-hook")],
            environment: environment
        )
        try await hook.waitForStderrLine(containing: "herald-session-hook: ready")

        let herald = try await Herald.connect(socketPath: daemon.socketPath)
        let bridge = HeraldBridge(herald: herald)
        let resign = NotificationCenter.default.notifications(named: Notification.Name("session.willResignActive"))
        let become = NotificationCenter.default.notifications(named: Notification.Name("session.didBecomeActive"))
        try await bridge.importing("session.*")
        try await bus.emit(
            objectPath: "/org/freedesktop/ScreenSaver",
            signal: "org.freedesktop.ScreenSaver.ActiveChanged",
            ["true"]
        )
        let away = await next(in: resign, where: "user", is: marker)
        #expect(away?.userInfo?["reason"] as? String == "screensaver")
        try await bus.emit(
            objectPath: "/org/freedesktop/ScreenSaver",
            signal: "org.freedesktop.ScreenSaver.ActiveChanged",
            ["false"]
        )
        let back = await next(in: become, where: "user", is: marker)
        #expect(back != nil)
        hook.signal(SIGTERM)
        #expect(try await hook.waitForExit() == 0)
        await bridge.cancel()
        await herald.close()
    }
}
