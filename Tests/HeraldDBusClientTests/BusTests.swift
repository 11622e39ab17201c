import Foundation
import HeraldDBus
import HeraldDBusClient
import HeraldLaunch
import HeraldTestSupport
import Testing

/// The client against a real dbus-daemon started on a private socket, and real peers (gdbus, python-dbusmock).
@Suite(.requires("dbus-daemon", "gdbus"))
struct BusTests {
    static func start() async throws -> (TemporaryDirectory, SessionBus, DBusClient) {
        let directory = TemporaryDirectory()
        let bus = try await SessionBus.start(socketPath: directory.file("bus"))
        let client = try await DBusClient.session(environment: ["DBUS_SESSION_BUS_ADDRESS": bus.address])
        return (directory, bus, client)
    }

    /// Waits until `name` has an owner, following NameOwnerChanged (no sleeps).
    static func waitForOwner(of name: String, client: DBusClient, changes: NameOwnerChanges) async throws -> String {
        if let owner = try await client.nameOwner(of: name) { return owner }
        for await change in changes where change.newOwner != nil {
            return change.newOwner!
        }
        throw DBusClientError(.disconnected, "the changes ended")
    }

    @Test func listsNamesAndTheOwnerOfTheBusName() async throws {
        let (directory, bus, client) = try await Self.start()
        defer { client.close() }
        _ = (directory, bus)
        let unique = try #require(client.uniqueName)
        #expect(unique.hasPrefix(":"))
        let names = try await client.listNames()
        #expect(names.contains("org.freedesktop.DBus"))
        #expect(names.contains(unique))
        #expect(try await client.nameOwner(of: "org.freedesktop.DBus") == "org.freedesktop.DBus")
        #expect(try await client.nameOwner(of: "org.example.Nobody") == nil)
    }

    @Test func connectsThroughAnAbstractSocket() async throws {
        let name = "herald-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let process = try ChildProcess(
            try SessionTools.path("dbus-daemon"),
            ["--session", "--nofork", "--nopidfile", "--print-address=1", "--address=unix:abstract=\(name)"]
        )
        defer { process.signal(SIGKILL) }
        let address = try await process.waitForStdoutLine(containing: "unix:abstract=")
        let parsed = try BusAddress(parsing: address.trimmingCharacters(in: .whitespaces))
        #expect(parsed.entries.first?.guid != nil)
        let client = try await DBusClient.connect(to: parsed)
        defer { client.close() }
        #expect(try await client.listNames().contains("org.freedesktop.DBus"))
    }

    @Test func closeEndsTheStreamsAndRefusesCalls() async throws {
        let (directory, bus, client) = try await Self.start()
        _ = (directory, bus)
        let signals = try await client.signals(matching: try MatchRule(interface: "org.example.Herald"))
        var iterator = signals.makeAsyncIterator()
        client.close()
        #expect(await iterator.next() == nil)
        do {
            _ = try await client.listNames()
            Issue.record("a call on a closed client succeeded")
        } catch {
            #expect(error.code == .closed)
        }
        #expect(!client.isConnected)
    }

    @Test func errorReplyCarriesItsName() async throws {
        let (directory, bus, client) = try await Self.start()
        defer { client.close() }
        _ = (directory, bus)
        do {
            _ = try await client.call(
                destination: "org.example.Nobody",
                path: "/",
                interface: "org.example.Nobody",
                member: "Hi"
            )
            Issue.record("a call to a name nobody owns succeeded")
        } catch {
            #expect(error.code == .errorReply)
            #expect(error.errorName == "org.freedesktop.DBus.Error.ServiceUnknown")
        }
    }

    @Test func signalFromGdbusEmitArrives() async throws {
        let (directory, bus, client) = try await Self.start()
        defer { client.close() }
        _ = directory
        let signals = try await client.signals(
            matching: try MatchRule(interface: "org.example.Herald", member: "Changed")
        )
        try await bus.emit(
            objectPath: "/org/example/thing",
            signal: "org.example.Herald.Changed",
            ["'on'", "uint32 7"]
        )
        var iterator = signals.makeAsyncIterator()
        let signal = try #require(await iterator.next())
        #expect(signal.path == "/org/example/thing")
        #expect(signal.body == [.string("on"), .uint32(7)])
        #expect(signals.droppedCount == 0)
    }

    @Test func propertiesChangedArrivesTakenApart() async throws {
        let (directory, bus, client) = try await Self.start()
        defer { client.close() }
        _ = directory
        let path = "/org/freedesktop/UPower/devices/DisplayDevice"
        let signals = try await client.propertiesChanged(of: "org.freedesktop.UPower.Device", at: path)
        // Another interface's change on the same object does not match arg0.
        try await bus.emit(
            objectPath: path,
            signal: "org.freedesktop.DBus.Properties.PropertiesChanged",
            ["'org.example.Other'", "{'X': <1>}", "@as []"]
        )
        try await bus.emit(
            objectPath: path,
            signal: "org.freedesktop.DBus.Properties.PropertiesChanged",
            ["'org.freedesktop.UPower.Device'", "{'Percentage': <42.5>, 'State': <uint32 2>}", "['IconName']"]
        )
        var iterator = signals.makeAsyncIterator()
        let message = try #require(await iterator.next())
        let change = try #require(DBusClient.PropertiesChange(message))
        #expect(change.path == path)
        #expect(change.interface == "org.freedesktop.UPower.Device")
        #expect(change.changed == ["Percentage": .double(42.5), "State": .uint32(2)])
        #expect(change.invalidated == ["IconName"])
    }

    @Test(.requiresDBusMock) func readsUPowerAndLogindPropertiesFromDBusMock() async throws {
        let (directory, bus, client) = try await Self.start()
        defer { client.close() }
        _ = directory
        let upowerChanges = try await client.nameOwnerChanges(of: "org.freedesktop.UPower")
        let upower = try DBusMock.start(["--template", "upower"], address: bus.address)
        defer { upower.signal(SIGKILL) }
        _ = try await Self.waitForOwner(of: "org.freedesktop.UPower", client: client, changes: upowerChanges)
        let display = try await client.properties(
            of: "org.freedesktop.UPower.Device",
            at: "/org/freedesktop/UPower/devices/DisplayDevice",
            on: "org.freedesktop.UPower"
        )
        #expect(display["WarningLevel"] == .uint32(1))
        #expect(display["IsPresent"] == .boolean(false))
        #expect(display["TimeToEmpty"] == .int64(0))
        #expect(
            try await client.property(
                "OnBattery",
                of: "org.freedesktop.UPower",
                at: "/org/freedesktop/UPower",
                on: "org.freedesktop.UPower"
            ) == .boolean(false)
        )

        let logindChanges = try await client.nameOwnerChanges(of: "org.freedesktop.login1")
        let logind = try DBusMock.start(["--template", "logind"], address: bus.address)
        defer { logind.signal(SIGKILL) }
        _ = try await Self.waitForOwner(of: "org.freedesktop.login1", client: client, changes: logindChanges)
        let manager = try await client.properties(
            of: "org.freedesktop.login1.Manager",
            at: "/org/freedesktop/login1",
            on: "org.freedesktop.login1"
        )
        #expect(manager["IdleHint"] == .boolean(false))
        #expect(manager["IdleAction"] == .string("ignore"))
        #expect(manager["IdleActionUSec"] == .uint64(1))
    }

    @Test(.requiresDBusMock) func followsAServiceThatExitsAndComesBack() async throws {
        let (directory, bus, client) = try await Self.start()
        defer { client.close() }
        _ = directory
        let changes = try await client.nameOwnerChanges(of: "org.freedesktop.UPower")
        var iterator = changes.makeAsyncIterator()
        let first = try DBusMock.start(["--template", "upower"], address: bus.address)
        let appeared = try #require(await iterator.next())
        #expect(appeared.name == "org.freedesktop.UPower")
        #expect(appeared.oldOwner == nil)
        let firstOwner = try #require(appeared.newOwner)
        first.signal(SIGKILL)
        let gone = try #require(await iterator.next())
        #expect(gone.oldOwner == firstOwner)
        #expect(gone.newOwner == nil)
        let second = try DBusMock.start(["--template", "upower"], address: bus.address)
        defer { second.signal(SIGKILL) }
        let back = try #require(await iterator.next())
        #expect(back.newOwner != nil)
        #expect(back.newOwner != firstOwner)
        #expect(try await client.nameOwner(of: "org.freedesktop.UPower") == back.newOwner)
    }

    @Test func survivesARestartOfTheBusAndRestoresItsMatches() async throws {
        let directory = TemporaryDirectory()
        var bus = try await SessionBus.start(socketPath: directory.file("bus"))
        var options = DBusClient.Options()
        options.minimumReconnectDelay = .milliseconds(20)
        options.maximumReconnectDelay = .milliseconds(200)
        let client = try await DBusClient.connect(to: try BusAddress(parsing: bus.address), options: options)
        defer { client.close() }
        let signals = try await client.signals(matching: try MatchRule(interface: "org.example.Herald"))
        let before = client.uniqueName
        var changes = client.connectionChanges().makeAsyncIterator()
        try await bus.stop()
        // Said as it happens: lost, then (once the new bus is up) made again.
        #expect(await changes.next() == false)
        bus = try await SessionBus.start(socketPath: directory.file("bus"))
        #expect(await changes.next() == true)
        // The new daemon has a new guid; the client was given the old one's address, so it must not insist on it.
        // The condition: the client is connected again (checked every 10 ms, at most 10 s).
        for _ in 0..<1000 where !client.isConnected {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(client.isConnected)
        // The bus answers a connection's messages in order: once ListNames is answered, the restored AddMatch is in.
        #expect(try await client.listNames().contains("org.freedesktop.DBus"))
        try await bus.emit(objectPath: "/x", signal: "org.example.Herald.Back", ["'again'"])
        var iterator = signals.makeAsyncIterator()
        let received = await iterator.next()
        #expect(received?.body == [.string("again")])
        #expect(client.uniqueName != nil)
        #expect(client.disconnections.count == 1)
        _ = before
    }
}
