import Foundation
import HeraldLaunch
import HeraldTestSupport
import HeraldWire
import Testing

/// Issue 31 under systemd: the state log is a memfd heraldd hands to the descriptor store (`FDSTORE=1`,
/// `FDNAME=herald-state-N`) and gets back through `LISTEN_FDS` / `LISTEN_FDNAMES` after a SIGKILL. The store is
/// the harness's stand-in (``DescriptorStore``).
struct StateDescriptorStoreTests {
    static func start(
        _ store: DescriptorStore,
        directory: TemporaryDirectory,
        announcesStore: Bool = true
    ) async throws -> LaunchedDaemon {
        let daemon = try await LaunchedDaemon.start(
            store.program(heraldd: TestBinaries.path("heraldd")),
            socketPath: directory.file("socket"),
            arguments: ["--log-level", "debug", "--no-plugins"],
            // systemd before 254 sets NOTIFY_SOCKET but not FDSTORE.
            environment: announcesStore ? store.environment : ["NOTIFY_SOCKET": store.address]
        )
        #expect(store.waitFor("READY=1"))
        return daemon
    }

    @Test func retainedValuesAndWillsComeBackFromTheDescriptorStore() async throws {
        let directory = TemporaryDirectory()
        let store = try DescriptorStore(address: directory.file("notify"))
        let first = try await Self.start(store, directory: directory)
        #expect(store.stored.map(\.name) == ["herald-state-1"])
        let writer = try WireClient.ready(socketPath: first.socketPath, version: 2)
        try writer.post("session.state", "active", retain: true)
        let origin = Frame.Origin(host: "desk", daemon: "heraldd-2", sequence: 77)
        try writer.post("bridge.mqtt.desk", "online", retain: true, origin: origin)
        let leaver = try WireClient.ready(socketPath: first.socketPath, client: "leaver")
        // Retained, so the reader below sees it however late it subscribes on a loaded machine.
        try leaver.registerWill(name: "presence.leaver", payload: "gone", delayMilliseconds: 3000, retain: true)
        _ = try await first.stop(signal: SIGKILL)
        try leaver.vanish()
        // The log was the memfd alone: no file beside the socket.
        #expect(!FileManager.default.fileExists(atPath: first.socketPath + ".state"))
        let second = try await Self.start(store, directory: directory)
        #expect(second.process.stderr.contains("from the stored herald-state-1"))
        // The compacted copy replaced the old one in the store.
        #expect(store.stored.map(\.name) == ["herald-state-2"])
        // The will falls due 3 s after the start: live if the reader is subscribed by then, else replayed.
        let reader = try WireClient.ready(socketPath: second.socketPath)
        let replayed = try reader.subscribe(1, "presence.*")
        let environment: [String: String?] = ["HERALD_SOCKET": second.socketPath]
        #expect(try await run("herald", ["get", "session.state"], environment: environment).stdout == "active\n")
        let relayed = try WireClient.ready(socketPath: second.socketPath, version: 2).subscribe(1, "bridge.**")
        guard case .notify(let notify) = relayed.first else {
            Issue.record("no replay of bridge.mqtt.desk: \(relayed)")
            return
        }
        #expect(notify.origin == origin && notify.retained && notify.payload == Array("online".utf8))
        let frames = try await blocking {
            try StateRestartTests.frames(
                afterSeeing: "presence.leaver",
                sentinel: "presence.sentinel",
                on: reader,
                replayed
            )
        }
        #expect(StateRestartTests.presenceNotifications(frames, named: "presence.leaver") == 1)
        _ = try await second.stop(signal: SIGKILL)
        let third = try await Self.start(store, directory: directory)
        let environment3: [String: String?] = ["HERALD_SOCKET": third.socketPath]
        #expect(try await run("herald", ["get", "session.state"], environment: environment3).stdout == "active\n")
        _ = try await third.stop(signal: SIGTERM)
    }

    /// Under a systemd that announces no store (before 254: `NOTIFY_SOCKET` without `FDSTORE`), the log is the file
    /// beside the socket, heraldd says so once, and a value survives a SIGKILL through the file.
    @Test func withoutAnAnnouncedStoreTheLogIsTheFileAndHeralddSaysSoOnce() async throws {
        let directory = TemporaryDirectory()
        let store = try DescriptorStore(address: directory.file("notify"))
        let first = try await Self.start(store, directory: directory, announcesStore: false)
        let writer = try WireClient.ready(socketPath: first.socketPath)
        try writer.post("session.state", "active", retain: true)
        try writer.post("session.state", "away", retain: true)
        _ = try await first.stop(signal: SIGKILL)
        let fallback = "systemd announced no descriptor store"
        #expect(first.process.stderr.components(separatedBy: fallback).count == 2, "\(first.process.stderr)")
        #expect(store.stored.isEmpty)
        #expect(FileManager.default.fileExists(atPath: first.socketPath + ".state"))
        let second = try await Self.start(store, directory: directory, announcesStore: false)
        let environment: [String: String?] = ["HERALD_SOCKET": second.socketPath]
        #expect(try await run("herald", ["get", "session.state"], environment: environment).stdout == "away\n")
        _ = try await second.stop(signal: SIGTERM)
    }
}
