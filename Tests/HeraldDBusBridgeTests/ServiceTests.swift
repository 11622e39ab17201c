import Foundation
import Herald
import HeraldDBus
import HeraldTestSupport
import Testing

/// Services and buses that come and go; MPRIS players.
@Suite(.serialized, .requiresDesktopBed)
struct ServiceTests {
    @Test func upowerLeavingClearsTheBatteryAndComingBackReadsItAgain() async throws {
        let bed = try await DesktopBed.start()
        try await bed.startLogind()
        try await bed.startUPower(onBattery: true, percentage: 42)
        let bridge = try await bed.startBridge()
        #expect(try await bed.retained("power.battery")?["percentage"] == .number(42))
        try await bed.stopMock("upower", owning: "org.freedesktop.UPower", on: .system)
        try await bridge.waitForStderrLine(containing: "no UPower on the system bus")
        #expect(try await eventually { try await bed.retained("power.battery") == nil })
        #expect(try await eventually { try await bed.sources()?["battery"] == .bool(false) })
        try await bed.startUPower(onBattery: false, percentage: 55)
        // Read again as it appears (the template's DisplayDevice, before the bed set it quietly), then followed.
        #expect(try await bed.waitForRetained("power.battery", "onBattery", .bool(false)))
        try await bed.marker(54)
        #expect(try await eventually { try await bed.sources()?["battery"] == .bool(true) })
        await bed.stop()
    }

    @Test func theSessionBusKilledAndRestartedIsReconnectedAndReadAgain() async throws {
        let bed = try await DesktopBed.start()
        try await bed.startLogind()
        try await bed.startNotifications()
        let bridge = try await bed.startBridge()
        #expect(try await bed.retained("session.state")?["state"] == .string("active"))
        let old = bed.sessionBus.withLock { $0 }
        try await old.stop()
        try await bridge.waitForStderrLine(containing: "the session bus went away")
        #expect(try await eventually { try await bed.busConnected("session") == false })
        let restarted = try await SessionBus.start(socketPath: old.socketPath)
        bed.sessionBus.withLock { $0 = restarted }
        // On the new bus, a screen saver that is already active: only reading it again can tell.
        try await bed.startScreenSaver(
            "org.gnome.ScreenSaver",
            "/org/gnome/ScreenSaver",
            "org.gnome.ScreenSaver",
            active: true
        )
        try await bridge.waitForStderrLine(containing: "the session bus is back")
        #expect(try await bed.waitForRetained("session.state", "state", .string("away")))
        #expect(try await bed.retained("session.state")?["reason"] == .string("screensaver"))
        let buses = try await bed.retained("bridge.dbus")?["buses"]
        if case .object(let object)? = buses, case .object(let session)? = object["session"] {
            #expect(session["reconnections"] == .number(1))
        } else {
            Issue.record("bridge.dbus has no buses: \(String(describing: buses))")
        }
        await bed.stop()
    }

    @Test func theSystemBusKilledAndRestartedIsReconnectedAndReadAgain() async throws {
        let bed = try await DesktopBed.start()
        try await bed.startLogind()
        try await bed.startUPower(onBattery: true, percentage: 42)
        try await bed.startNetworkManager()
        let bridge = try await bed.startBridge()
        #expect(try await bed.retained("power.battery")?["percentage"] == .number(42))
        #expect(try await bed.retained("network.state") != nil)
        let old = bed.systemBus.withLock { $0 }
        try await old.stop()
        try await bridge.waitForStderrLine(containing: "the system bus went away")
        #expect(try await eventually { try await bed.busConnected("system") == false })
        let restarted = try await SessionBus.start(socketPath: old.socketPath)
        bed.systemBus.withLock { $0 = restarted }
        // The services died with their bus. On the new one they start in another state (locked, on mains), which
        // only reading them again can tell; then changes, which only restored matches can bring.
        try await bed.startLogind(locked: true)
        try await bed.startUPower(onBattery: false, percentage: 42)
        try await bed.startNetworkManager()
        try await bridge.waitForStderrLine(containing: "the system bus is back")
        #expect(try await bed.waitForRetained("session.state", "state", .string("away")))
        #expect(try await bed.waitForRetained("power.battery", "onBattery", .bool(false)))
        try await bed.updateProperties(
            .system,
            "org.freedesktop.UPower",
            DesktopBed.displayDevice,
            "org.freedesktop.UPower.Device",
            ["Percentage": .double(77)]
        )
        try await bed.mockCall(
            .system,
            "org.freedesktop.NetworkManager",
            "/org/freedesktop/NetworkManager",
            "SetGlobalConnectionState",
            [.uint32(20)]
        )
        #expect(try await bed.waitForRetained("power.battery", "percentage", .number(77)))
        #expect(try await bed.waitForRetained("network.state", "state", .string("disconnected")))
        #expect(try await eventually { try await bed.busConnected("system") == true })
        let buses = try await bed.retained("bridge.dbus")?["buses"]
        if case .object(let object)? = buses, case .object(let system)? = object["system"] {
            #expect(system["reconnections"] == .number(1))
        } else {
            Issue.record("bridge.dbus has no buses: \(String(describing: buses))")
        }
        #expect(bridge.exitStatus == nil)
        await bed.stop()
    }

    @Test func heralddRestartedGetsEverySourcesStateAgainAndTheBridgeSleepsAfter() async throws {
        let bed = try await DesktopBed.start()
        try await bed.startLogind(locked: true)
        try await bed.startUPower(onBattery: true, percentage: 42)
        let bridge = try await bed.startBridge()
        try await bed.daemon.stop(signal: SIGKILL)
        let restarted = try await TestDaemon.start(directory: bed.daemon.directory)
        defer { restarted.process.signal(SIGKILL) }
        try await bridge.waitForStderrLine(containing: "heraldd is back")
        let herald = try await Herald.connect(socketPath: restarted.socketPath)
        #expect(
            try await eventually {
                try await herald.retainedValue(of: "power.battery")?.userInfo?["percentage"] == .number(42)
            }
        )
        let state = try await herald.retainedValue(of: "session.state")?.userInfo
        #expect(state?["state"] == .string("away"), "\(String(describing: state)) \(bridge.stderr)")
        #expect(try await herald.retainedValue(of: "bridge.dbus") != nil)
        await herald.close()
        // Reconnecting (its backoff, the new connection's first steps) used no thread of the global concurrent
        // executor, whose worker pool would wake the bridge once a second from then on.
        try await bed.settle()
        let woke = try await HostileTests.aQuietWindowComes(bridge.pid)
        #expect(woke == 0, "after heraldd restarted, the idle bridge woke \(woke) times in every 3 s window")
        await bed.stop()
    }

    @Test func anMPRISPlayerIsFollowedAsItAppearsChangesAndLeaves() async throws {
        let bed = try await DesktopBed.start()
        let bridge = try await bed.startBridge()
        let name = "org.mpris.MediaPlayer2.testplayer"
        let player = "org.mpris.MediaPlayer2.Player"
        try await bed.startPlayer("testplayer")
        try await bridge.waitForStderrLine(containing: "\(name) appeared")
        #expect(
            try await eventually { try await bed.retained("media.player.testplayer")?["status"] == .string("Stopped") }
        )
        // Properties.Set, one property at a time (dbusmock's UpdateProperties cannot wrap a dictionary).
        let metadata = DesktopBed.dictionary([
            "xesam:title": .string("Blue in Green"), "xesam:artist": .array(.string, [.string("Miles Davis")]),
        ])
        for (property, value) in [("Metadata", metadata), ("PlaybackStatus", DBusValue.string("Playing"))] {
            _ = try await bed.sessionClient.call(
                destination: name,
                path: "/org/mpris/MediaPlayer2",
                interface: "org.freedesktop.DBus.Properties",
                member: "Set",
                [.string(player), .string(property), .variant(value)]
            )
        }
        let expected: [String: JSONValue] = [
            "status": .string("Playing"), "title": .string("Blue in Green"), "artist": .string("Miles Davis"),
        ]
        #expect(try await eventually { try await bed.retained("media.player.testplayer") == expected })
        try await bed.stopMock("testplayer", owning: name, on: .session)
        #expect(try await eventually { try await bed.retained("media.player.testplayer") == nil })
        await bed.stop()
    }
}

extension DesktopBed {
    /// Whether the retained `bridge.dbus` says the bridge is connected to `bus`.
    func busConnected(_ bus: String) async throws -> Bool? {
        guard case .object(let buses)? = try await retained("bridge.dbus")?["buses"],
            case .object(let entry)? = buses[bus], case .bool(let connected)? = entry["connected"]
        else { return nil }
        return connected
    }

    /// The `sources` of the retained `bridge.dbus`.
    func sources() async throws -> [String: JSONValue]? {
        guard case .object(let sources)? = try await retained("bridge.dbus")?["sources"] else { return nil }
        return sources
    }
}
