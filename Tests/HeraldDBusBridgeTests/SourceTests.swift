import Foundation
import Herald
import HeraldDBus
import HeraldTestSupport
import Testing

/// Each source of herald-dbus-bridge, end to end: dbusmock services on two real buses, the real bridge, a real heraldd.
@Suite(.serialized, .requiresDesktopBed)
struct SourceTests {
    @Test func everySourcesStateIsRetainedBeforeAnyChange() async throws {
        let bed = try await DesktopBed.start()
        try await bed.startLogind(locked: true)
        try await bed.startUPower(onBattery: true, percentage: 42)
        try await bed.startNetworkManager()
        try await bed.startNotifications()
        _ = try await bed.startBridge()

        let session = try await bed.retained("session.state")
        #expect(session?["state"] == .string("away"))
        #expect(session?["locked"] == .bool(true))
        let battery = try await bed.retained("power.battery")
        #expect(battery?["percentage"] == .number(42))
        #expect(battery?["onBattery"] == .bool(true))
        #expect(battery?["state"] == .string("discharging"))
        #expect(battery?["timeToEmpty"] == .number(3600))
        #expect(
            try await bed.retained("network.state") == [
                "state": .string("connected-global"), "connectivity": .string("full"),
            ]
        )
        #expect(try await bed.retained("system.sleep") == ["sleeping": .bool(false)])
        #expect(try await bed.retained("session.idle")?["idle"] == .bool(false))
        let state = try await bed.retained("bridge.dbus")
        guard case .object(let sources)? = state?["sources"] else {
            Issue.record("bridge.dbus has no sources: \(String(describing: state))")
            return
        }
        for source in ["session", "sleep", "idle", "battery", "network", "notifications"] {
            #expect(sources[source] == .bool(true), "\(source) is not active")
        }
        // What the first reading found is a state, not a transition: no "went away" at start.
        try await bed.marker(43)
        #expect(bed.posts("session.willResignActive").isEmpty)
        await bed.stop()
    }

    @Test func eachChangeIsOnePostAndARepeatedSignalIsNone() async throws {
        let bed = try await DesktopBed.start()
        try await bed.startLogind()
        try await bed.startUPower(onBattery: false, percentage: 80)
        try await bed.startNetworkManager()
        _ = try await bed.startBridge()

        // The session: LockedHint, twice.
        try await bed.setSession(["LockedHint": .boolean(true)])
        #expect(try await bed.waitForPosts("session.willResignActive", count: 1))
        #expect(try await bed.waitForRetained("session.state", "state", .string("away")))
        try await bed.setSession(["LockedHint": .boolean(true)])
        // Idle: one change of IdleHint and IdleSinceHint together, then the same again.
        let since: UInt64 = 1_795_000_000_000_000
        try await bed.setSession(["IdleHint": .boolean(true), "IdleSinceHint": .uint64(since)])
        #expect(try await bed.waitForRetained("session.idle", "idle", .bool(true)))
        try await bed.setSession(["IdleHint": .boolean(true), "IdleSinceHint": .uint64(since)])
        // The battery: a change, then the same value again.
        let upower = "org.freedesktop.UPower"
        try await bed.updateProperties(
            .system,
            upower,
            DesktopBed.displayDevice,
            "org.freedesktop.UPower.Device",
            ["Percentage": .double(70)]
        )
        try await bed.updateProperties(
            .system,
            upower,
            DesktopBed.displayDevice,
            "org.freedesktop.UPower.Device",
            ["Percentage": .double(70)]
        )
        try await bed.updateProperties(
            .system,
            upower,
            "/org/freedesktop/UPower",
            "org.freedesktop.UPower",
            ["OnBattery": .boolean(true)]
        )
        // The network: NetworkManager's SetGlobalConnectionState sends StateChanged and PropertiesChanged for one change.
        try await bed.mockCall(
            .system,
            "org.freedesktop.NetworkManager",
            "/org/freedesktop/NetworkManager",
            "SetGlobalConnectionState",
            [.uint32(20)]
        )
        #expect(try await bed.waitForRetained("network.state", "state", .string("disconnected")))
        try await bed.marker(69)

        #expect(bed.posts("session.willResignActive").count == 1)
        #expect(bed.posts("session.state").count == 1)
        #expect(bed.posts("session.idle").count == 1)
        #expect(
            bed.posts("session.idle").first?["since"]
                == .string(ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: 1_795_000_000)))
        )
        let percentages = bed.posts("power.battery").map { $0["percentage"] }
        #expect(percentages == [.number(70), .number(70), .number(69)], "\(bed.posts("power.battery"))")
        #expect(bed.posts("power.battery")[1]["onBattery"] == .bool(true))
        #expect(bed.posts("network.state") == [["state": .string("disconnected"), "connectivity": .string("full")]])
        #expect(try await bed.retained("power.battery")?["percentage"] == .number(69))

        // And back: one didBecomeActive.
        try await bed.setSession(["LockedHint": .boolean(false)])
        #expect(try await bed.waitForPosts("session.didBecomeActive", count: 1))
        #expect(try await bed.retained("session.state")?["state"] == .string("active"))
        await bed.stop()
    }

    @Test func resumeReadsAgainWhatChangedWhileAsleep() async throws {
        let bed = try await DesktopBed.start()
        try await bed.startLogind()
        try await bed.startUPower(onBattery: true, percentage: 60)
        try await bed.startNetworkManager()
        _ = try await bed.startBridge()
        let login = "org.freedesktop.login1"
        let manager = "org.freedesktop.login1.Manager"
        try await bed.emit(.system, login, "/org/freedesktop/login1", manager, "PrepareForSleep", "b", [.boolean(true)])
        #expect(try await bed.waitForPosts("system.willSleep", count: 1))
        #expect(try await bed.retained("system.sleep") == ["sleeping": .bool(true)])
        // While asleep, the battery drains and the network goes, and nobody says so.
        try await bed.quietlySet(
            .system,
            "org.freedesktop.UPower",
            DesktopBed.displayDevice,
            "org.freedesktop.UPower.Device",
            ["Percentage": .double(31)]
        )
        try await bed.quietlySet(
            .system,
            "org.freedesktop.NetworkManager",
            "/org/freedesktop/NetworkManager",
            "org.freedesktop.NetworkManager",
            ["State": .uint32(20)]
        )
        let woke = ContinuousClock.now
        try await bed.emit(
            .system,
            login,
            "/org/freedesktop/login1",
            manager,
            "PrepareForSleep",
            "b",
            [.boolean(false)]
        )
        #expect(try await bed.waitForPosts("system.didWake", count: 1))
        #expect(try await bed.eventuallyPosted("power.battery") { $0["percentage"] == .number(31) })
        #expect(try await bed.eventuallyPosted("network.state") { $0["state"] == .string("disconnected") })
        // The figure, for the record (the bound is shown by the benchmark, not asserted here).
        print("resume: the state read again was posted \(ContinuousClock.now - woke) after PrepareForSleep(false)")
        #expect(try await bed.retained("system.sleep") == ["sleeping": .bool(false)])
        await bed.stop()
    }
}

extension DesktopBed {
    /// Waits until a live post of `name` satisfies `condition`.
    func eventuallyPosted(
        _ name: String,
        timeout: Duration = .seconds(20),
        _ condition: @escaping ([String: JSONValue]) -> Bool
    )
        async throws -> Bool
    {
        try await eventually(timeout: timeout) { self.posts(name).contains(where: condition) }
    }
}
