import Foundation
import Herald
import HeraldDBus
import HeraldDBusClient
import HeraldLaunch
import HeraldTestSupport
import Synchronization
import Testing

/// A desktop for the bridge to watch: a real heraldd, a dbus-daemon for the session bus and a second one playing
/// the system bus, python-dbusmock services on them, a Herald observer that records every live post, and the real
/// built herald-dbus-bridge.
final class DesktopBed: Sendable {
    enum Bus: Sendable {
        case session
        case system
    }

    let daemon: TestDaemon
    let sessionBus: Mutex<SessionBus>
    let systemBus: Mutex<SessionBus>
    let sessionClient: DBusClient
    let systemClient: DBusClient
    let herald: Herald
    /// Every live (not retained) post the observer saw, in order: name and payload.
    let seen = Mutex<[(name: String, payload: [String: JSONValue])]>([])
    let mocks = Mutex<[String: ChildProcess]>([:])
    let bridge = Mutex<ChildProcess?>(nil)

    /// The interpreter that can import dbusmock (``SessionTools/dbusmockPython``).
    static var python: String? { SessionTools.dbusmockPython }

    static var available: Bool {
        python != nil && SessionTools.find("dbus-daemon") != nil
    }

    private init(
        daemon: TestDaemon,
        sessionBus: SessionBus,
        systemBus: SessionBus,
        sessionClient: DBusClient,
        systemClient: DBusClient,
        herald: Herald
    ) {
        self.daemon = daemon
        self.sessionBus = Mutex(sessionBus)
        self.systemBus = Mutex(systemBus)
        self.sessionClient = sessionClient
        self.systemClient = systemClient
        self.herald = herald
    }

    /// Starts heraldd, both buses, and an observer of every name the bridge posts.
    static func start() async throws -> DesktopBed {
        let daemon = try await TestDaemon.start()
        let sessionBus = try await SessionBus.start(socketPath: daemon.directory.file("session-bus"))
        let systemBus = try await SessionBus.start(socketPath: daemon.directory.file("system-bus"))
        var options = DBusClient.Options()
        options.maximumReconnectDelay = .milliseconds(200)
        let sessionClient = try await DBusClient.connect(
            to: try BusAddress(parsing: sessionBus.address),
            options: options
        )
        let systemClient = try await DBusClient.connect(
            to: try BusAddress(parsing: systemBus.address),
            options: options
        )
        let herald = try await Herald.connect(socketPath: daemon.socketPath)
        let bed = DesktopBed(
            daemon: daemon,
            sessionBus: sessionBus,
            systemBus: systemBus,
            sessionClient: sessionClient,
            systemClient: systemClient,
            herald: herald
        )
        let patterns = [
            "session.*", "system.*", "power.*", "network.*", "media.player.*", "notify.desktop.*", "bridge.*",
        ]
        let stream = try await herald.notifications(matching: patterns)
        Task { [weak bed] in
            for await notification in stream where notification.notice == nil && !notification.isRetained {
                let payload: [String: JSONValue]
                if case .object(let object)? = JSONValue.decode(notification.payload) {
                    payload = object
                } else {
                    payload = [:]
                }
                bed?.seen.withLock { $0.append((notification.name, payload)) }
            }
        }
        return bed
    }

    var sessionAddress: String { sessionBus.withLock { $0.address } }

    var systemAddress: String { systemBus.withLock { $0.address } }

    func client(_ bus: Bus) -> DBusClient { bus == .session ? sessionClient : systemClient }

    func address(_ bus: Bus) -> String { bus == .session ? sessionAddress : systemAddress }

    /// Starts `python3 -m dbusmock` with `arguments` on `bus`, under `key`, and waits until it owns `name`.
    func startMock(_ key: String, on bus: Bus, owning name: String, _ arguments: [String]) async throws {
        guard let python = Self.python else { throw BedError("no python3 with dbusmock") }
        let process = try ChildProcess(
            python,
            ["-m", "dbusmock", bus == .session ? "--session" : "--system"] + arguments,
            environment: ["DBUS_SESSION_BUS_ADDRESS": address(bus), "DBUS_SYSTEM_BUS_ADDRESS": address(bus)]
        )
        mocks.withLock { $0[key] = process }
        let client = self.client(bus)
        let owned = try await eventually(timeout: .seconds(30)) {
            (try? await client.nameOwner(of: name)) != nil
        }
        guard owned else { throw BedError("dbusmock never owned \(name): \(process.stderr)") }
    }

    /// Stops the mock `key` and waits until its name is gone.
    func stopMock(_ key: String, owning name: String, on bus: Bus) async throws {
        let process = mocks.withLock { $0.removeValue(forKey: key) }
        process?.signal(SIGKILL)
        _ = try await process?.waitForExit(timeout: .seconds(10))
        let client = self.client(bus)
        _ = try await eventually { (try? await client.nameOwner(of: name)) == nil }
    }

    /// logind with the session `c1` of alice, its LockedHint set to `locked`.
    func startLogind(locked: Bool = false) async throws {
        try await startMock("logind", on: .system, owning: "org.freedesktop.login1", ["-t", "logind"])
        _ = try await mockCall(
            .system,
            "org.freedesktop.login1",
            "/org/freedesktop/login1",
            "AddSession",
            [.string("c1"), .string("seat0"), .uint32(1000), .string("alice"), .boolean(true)]
        )
        if locked { try await setSession(["LockedHint": .boolean(true)]) }
    }

    /// UPower with its DisplayDevice at `percentage`, on battery or not.
    func startUPower(onBattery: Bool, percentage: Double) async throws {
        try await startMock(
            "upower",
            on: .system,
            owning: "org.freedesktop.UPower",
            ["-t", "upower", "-p", "{\"OnBattery\": \(onBattery ? "true" : "false")}"]
        )
        try await quietlySet(
            .system,
            "org.freedesktop.UPower",
            Self.displayDevice,
            "org.freedesktop.UPower.Device",
            ["Percentage": .double(percentage), "State": .uint32(2), "TimeToEmpty": .int64(3600)]
        )
    }

    static let displayDevice = "/org/freedesktop/UPower/devices/DisplayDevice"

    func startNetworkManager() async throws {
        try await startMock(
            "nm",
            on: .system,
            owning: "org.freedesktop.NetworkManager",
            ["-t", "networkmanager"]
        )
    }

    func startNotifications() async throws {
        try await startMock(
            "notifications",
            on: .session,
            owning: "org.freedesktop.Notifications",
            ["-t", "notification_daemon"]
        )
    }

    /// A screen saver at `name`, `path`, `interface`, whose GetActive answers `active` from the start.
    func startScreenSaver(_ name: String, _ path: String, _ interface: String, active: Bool = false) async throws {
        let template = try writeTemplate(
            name: name,
            path: path,
            interface: interface,
            load: "mock.AddMethod(MAIN_IFACE, 'GetActive', '', 'b', 'ret = \(active ? "True" : "False")')"
        )
        try await startMock(name, on: .session, owning: name, ["-t", template])
    }

    /// An MPRIS player at `org.mpris.MediaPlayer2.NAME`, stopped, with no metadata.
    func startPlayer(_ name: String) async throws {
        let template = try writeTemplate(
            name: "org.mpris.MediaPlayer2.\(name)",
            path: "/org/mpris/MediaPlayer2",
            interface: "org.mpris.MediaPlayer2.Player",
            load: """
                mock.AddProperties(MAIN_IFACE, dbus.Dictionary({'PlaybackStatus': 'Stopped', \
                'Metadata': dbus.Dictionary({}, signature='sv')}, signature='sv'))
                """
        )
        try await startMock(name, on: .session, owning: "org.mpris.MediaPlayer2.\(name)", ["-t", template])
    }

    /// A dbusmock template of our own, so that the service answers as it should from its first call (the mock's
    /// control methods could only change it after it owns its name, when the bridge may have asked already).
    private func writeTemplate(name: String, path: String, interface: String, load: String) throws -> String {
        let file = daemon.directory.file("mock_\(name.replacingOccurrences(of: ".", with: "_")).py")
        let text = """
            import dbus
            BUS_NAME = '\(name)'
            MAIN_OBJ = '\(path)'
            MAIN_IFACE = '\(interface)'
            SYSTEM_BUS = False

            def load(mock, parameters):
                \(load)

            """
        try text.write(toFile: file, atomically: true, encoding: .utf8)
        return file
    }

    /// Calls a method of dbusmock's control interface.
    @discardableResult
    func mockCall(
        _ bus: Bus,
        _ destination: String,
        _ path: String,
        _ member: String,
        _ arguments: [DBusValue]
    )
        async throws -> [DBusValue]
    {
        try await client(bus).call(
            destination: destination,
            path: path,
            interface: "org.freedesktop.DBus.Mock",
            member: member,
            arguments
        )
    }

    /// Sets properties and sends one PropertiesChanged (dbusmock's UpdateProperties).
    func updateProperties(
        _ bus: Bus,
        _ destination: String,
        _ path: String,
        _ interface: String,
        _ properties: [String: DBusValue]
    ) async throws {
        try await mockCall(
            bus,
            destination,
            path,
            "UpdateProperties",
            [.string(interface), Self.dictionary(properties)]
        )
    }

    /// Sets properties and sends no signal, as a service whose state changes while the machine sleeps.
    func quietlySet(
        _ bus: Bus,
        _ destination: String,
        _ path: String,
        _ interface: String,
        _ properties: [String: DBusValue]
    ) async throws {
        // A method of our own on the object: dbusmock runs its code with `self` the object, and sends nothing.
        try await mockCall(
            bus,
            destination,
            path,
            "AddMethod",
            [
                .string(interface), .string("HeraldQuietSet"), .string("a{sv}"), .string(""),
                .string("self.props[\(pythonString(interface))].update(args[0])"),
            ]
        )
        _ = try await client(bus).call(
            destination: destination,
            path: path,
            interface: interface,
            member: "HeraldQuietSet",
            [Self.dictionary(properties)]
        )
    }

    private func pythonString(_ text: String) -> String { "'" + text + "'" }

    /// Emits a signal from a dbusmock object.
    func emit(
        _ bus: Bus,
        _ destination: String,
        _ path: String,
        _ interface: String,
        _ member: String,
        _ signature: String,
        _ arguments: [DBusValue]
    ) async throws {
        try await mockCall(
            bus,
            destination,
            path,
            "EmitSignal",
            [.string(interface), .string(member), .string(signature), .array(.variant, arguments.map { .variant($0) })]
        )
    }

    static func dictionary(_ properties: [String: DBusValue]) -> DBusValue {
        .dictionary(
            key: .string,
            value: .variant,
            properties.keys.sorted().map { (.string($0), .variant(properties[$0]!)) }
        )
    }

    static let sessionPath = "/org/freedesktop/login1/session/c1"

    func setSession(_ properties: [String: DBusValue]) async throws {
        try await updateProperties(
            .system,
            "org.freedesktop.login1",
            Self.sessionPath,
            "org.freedesktop.login1.Session",
            properties
        )
    }

    /// Starts the bridge and waits until it has read both buses.
    func startBridge(_ arguments: [String] = []) async throws -> ChildProcess {
        let process = try ChildProcess(
            TestBinaries.path("herald-dbus-bridge"),
            ["--socket", daemon.socketPath, "--lock-timeout", "1", "--verbose"] + arguments,
            environment: [
                "DBUS_SESSION_BUS_ADDRESS": sessionAddress, "DBUS_SYSTEM_BUS_ADDRESS": systemAddress,
                "XDG_SESSION_ID": "c1", "USER": "alice",
            ]
        )
        bridge.withLock { $0 = process }
        try await process.waitForStderrLine(containing: "every source read")
        try await settle()
        return process
    }

    /// Waits until the observer has seen everything posted so far (a marker of our own comes after it), then forgets
    /// it: the posts counted next are the ones that follow.
    func settle() async throws {
        let marker = "bridge.testmarker"
        // Posted again every 200 ms until seen: after heraldd restarts, the observer's stream is registered again
        // a little after its Herald has reconnected, and a marker posted in between reaches no one.
        var polls = 0
        let came = try await eventually {
            if polls % 20 == 0 { try? await self.herald.post(marker) }
            polls += 1
            return self.seen.withLock { $0.contains { $0.name == marker } }
        }
        #expect(came)
        seen.withLock { $0.removeAll() }
    }

    /// The retained payload of `name`, or nil.
    func retained(_ name: String) async throws -> [String: JSONValue]? {
        try await herald.retainedValue(of: name)?.userInfo
    }

    /// Waits until the retained `name` has `key` equal to `value`.
    func waitForRetained(
        _ name: String,
        _ key: String,
        _ value: JSONValue,
        timeout: Duration = .seconds(20)
    )
        async throws -> Bool
    {
        try await eventually(timeout: timeout) { try await self.retained(name)?[key] == value }
    }

    /// The live posts of `name` seen so far.
    func posts(_ name: String) -> [[String: JSONValue]] {
        seen.withLock { $0.filter { $0.name == name }.map(\.payload) }
    }

    /// Waits until `count` live posts of `name` were seen.
    func waitForPosts(_ name: String, count: Int, timeout: Duration = .seconds(20)) async throws -> Bool {
        try await eventually(timeout: timeout) { self.posts(name).count >= count }
    }

    /// A marker through the bridge: a change of the battery, posted after everything the bridge had before it.
    /// Anything a repeated signal would have posted arrived before the marker.
    func marker(_ percentage: Double) async throws {
        try await updateProperties(
            .system,
            "org.freedesktop.UPower",
            Self.displayDevice,
            "org.freedesktop.UPower.Device",
            ["Percentage": .double(percentage)]
        )
        let seen = try await eventually {
            self.posts("power.battery").contains { $0["percentage"] == .number(percentage) }
        }
        #expect(seen, "the marker \(percentage) never came through the bridge")
    }

    func stop() async {
        bridge.withLock { $0 }?.signal(SIGKILL)
        for process in mocks.withLock({ Array($0.values) }) { process.signal(SIGKILL) }
        sessionClient.close()
        systemClient.close()
        await herald.close()
    }

    deinit {
        bridge.withLock { $0 }?.signal(SIGKILL)
        for process in mocks.withLock({ Array($0.values) }) { process.signal(SIGKILL) }
    }
}

extension Trait where Self == ConditionTrait {
    /// Runs the test only where dbus-daemon and a python3 with dbusmock are installed; elsewhere it is skipped with
    /// the reason, and with `HERALD_REQUIRE_TEST_TOOLS=1` it runs (and fails).
    static var requiresDesktopBed: ConditionTrait {
        .enabled(
            if: DesktopBed.available || SessionTools.required,
            "needs dbus-daemon and python3 with dbusmock (python3-dbusmock): run 'sh contrib/ci/install-test-tools.sh'"
        )
    }
}

/// A bed that could not be set up, with why.
struct BedError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
