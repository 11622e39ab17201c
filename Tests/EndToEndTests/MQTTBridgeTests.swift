import Foundation
import Herald
import HeraldLaunch
import HeraldPosix
import HeraldTestSupport
import Synchronization
import Testing

/// A mosquitto of the test's own, on a free 127.0.0.1 port: never the system's service.
final class TestBroker: Sendable {
    let directory: TemporaryDirectory
    let port: UInt16
    let persistent: Bool
    let process: ChildProcess

    /// Starts a broker, on `port` if given. A persistent one saves its sessions (subscriptions, queued QoS 1
    /// messages) in `directory` when it stops, and reads them back when it starts there again.
    init(
        port: UInt16? = nil,
        persistent: Bool = false,
        directory: TemporaryDirectory = TemporaryDirectory(prefix: "mq"),
        extraConfiguration: String = ""
    ) async throws {
        self.directory = directory
        self.port = try port ?? TestBroker.freePort()
        self.persistent = persistent
        let config = directory.file("mosquitto.conf")
        var text = "listener \(self.port) 127.0.0.1\nallow_anonymous true\nlog_dest stderr\n"
        if persistent {
            // Started as root, mosquitto drops to its own user, which could not write its database in a directory
            // of ours; `user root` keeps it as it is (and means nothing when started by another user).
            text += "persistence true\npersistence_location \(directory.path)/\nuser root\n"
        } else {
            text += "persistence false\n"
        }
        text += extraConfiguration
        try text.write(toFile: config, atomically: true, encoding: .utf8)
        process = try ChildProcess(try SessionTools.path("mosquitto"), ["-c", config])
        _ = try await process.waitForStderrLine(containing: "running", timeout: .seconds(10))
    }

    /// Stops this broker (SIGTERM: a persistent one saves its sessions) and starts another on the same port and
    /// directory.
    func restarted() async throws -> TestBroker {
        await process.stop()
        return try await TestBroker(port: port, persistent: persistent, directory: directory)
    }

    var url: String { "mqtt://127.0.0.1:\(port)" }

    /// A port the kernel just handed out and nobody holds: bound, read back, and closed.
    static func freePort() throws -> UInt16 {
        let listener = try TCPSocket.listen(host: "127.0.0.1", port: 0)
        let port = try TCPSocket.localPort(of: listener)
        listener.close()
        return port
    }
}

/// One host: its own heraldd and its bridge.
final class BridgedHost: Sendable {
    let daemon: TestDaemon
    let bridge: ChildProcess
    let hostID: String

    init(
        hostID: String,
        broker: String,
        exports: [String],
        imports: [String],
        extra: [String] = [],
        daemonArguments: [String] = []
    ) async throws {
        self.hostID = hostID
        daemon = try await TestDaemon.start(arguments: daemonArguments)
        var arguments = ["--broker", broker, "--host-id", hostID, "--socket", daemon.socketPath] + extra
        for pattern in exports { arguments += ["--export", pattern] }
        for pattern in imports { arguments += ["--import", pattern] }
        bridge = try ChildProcess(TestBinaries.path("herald-mqtt-bridge"), arguments)
    }

    /// A host whose bridge connects to the fake broker listening on `listener`, a socket the test accepts from.
    convenience init(
        hostID: String,
        fakeBroker listener: borrowing FileDescriptor,
        exports: [String] = [],
        imports: [String] = ["x.**"],
        extra: [String] = []
    ) async throws {
        let port = try TCPSocket.localPort(of: listener)
        try await self.init(
            hostID: hostID,
            broker: "mqtt://127.0.0.1:\(port)",
            exports: exports,
            imports: imports,
            extra: extra
        )
    }

    /// Waits until the bridge's subscriptions on both sides are live.
    func waitUntilBridging(exports: Int) async throws {
        _ = try await bridge.waitForStderrLine(containing: "subscribed to", timeout: .seconds(20))
        let ready = try await eventually(timeout: .seconds(20)) {
            bridge.stderrLines.filter { $0.contains("notice: exporting") }.count == exports
        }
        #expect(ready, "the bridge of \(hostID) did not subscribe: \(bridge.stderr)")
    }

    func connect() async throws -> Herald {
        try await Herald.connect(socketPath: daemon.socketPath, options: .init(reconnects: false))
    }

    func stop() async {
        await bridge.stop()
        _ = try? await daemon.stop()
    }
}

/// Collects what one subscription receives.
final class Received: Sendable {
    private final class Items: Sendable {
        let mutex = Mutex<[HeraldNotification]>([])
        /// When each name first arrived, as the collecting task saw it.
        let arrivals = Mutex<[String: ContinuousClock.Instant]>([:])
    }

    private let items = Items()
    private let task: Task<Void, Never>

    /// Collects on `executor` when given (a Herald's `taskExecutor`, its reader thread): a latency measured from
    /// what arrives must not include the wait for one of the cooperative pool's two threads, which a thousand
    /// parallel tests share.
    init(_ notifications: HeraldNotifications, on executor: (any TaskExecutor)? = nil) {
        let items = self.items
        task = Task(executorPreference: executor) {
            for await notification in notifications where notification.notice == nil {
                let now = ContinuousClock.now
                items.arrivals.withLock { arrivals in
                    if arrivals[notification.name] == nil { arrivals[notification.name] = now }
                }
                items.mutex.withLock { $0.append(notification) }
            }
        }
    }

    var all: [HeraldNotification] { items.mutex.withLock { $0 } }

    func named(_ name: String) -> [HeraldNotification] { all.filter { $0.name == name } }

    /// When a notification named `name` first arrived, or nil.
    func arrival(of name: String) -> ContinuousClock.Instant? { items.arrivals.withLock { $0[name] } }

    deinit { task.cancel() }
}

/// herald-mqtt-bridge against a real mosquitto, with a heraldd per host (issue 18).
@Suite(.serialized) struct MQTTBridgeTests {
    /// Runs `body` with a broker and two bridged hosts, A and B, once both are bridging, and stops all three
    /// afterwards, whether `body` fails or not (its error is recorded as an issue).
    private func withTwoHosts(
        a: (exports: [String], imports: [String]),
        b: (exports: [String], imports: [String]),
        _ body: (BridgedHost, BridgedHost) async throws -> Void
    ) async throws {
        let broker = try await TestBroker()
        let hostA = try await BridgedHost(hostID: "hostA", broker: broker.url, exports: a.exports, imports: a.imports)
        let hostB = try await BridgedHost(hostID: "hostB", broker: broker.url, exports: b.exports, imports: b.imports)
        do {
            try await hostA.waitUntilBridging(exports: a.exports.count)
            try await hostB.waitUntilBridging(exports: b.exports.count)
            try await body(hostA, hostB)
        } catch {
            Issue.record(error)
        }
        await hostA.stop()
        await hostB.stop()
        await broker.process.stop()
    }

    @Test(.requires("mosquitto"), .hangGuard)
    func postOnAReachesBOnceWithItsOriginAndDoesNotComeBack() async throws {
        try await withTwoHosts(a: (["build.**"], ["build.**"]), b: (["build.**"], ["build.**"])) { a, b in
            let onA = try await a.connect()
            let onB = try await b.connect()
            let seenOnA = Received(try await onA.notifications(matching: "build.**"))
            let seenOnB = Received(try await onB.notifications(matching: "build.**"))

            try await onA.post("build.done", userInfo: ["ok": true])
            let arrived = try await eventually(timeout: .seconds(10)) { !seenOnB.named("build.done").isEmpty }
            #expect(arrived, "B never received build.done; bridge A: \(a.bridge.stderr) bridge B: \(b.bridge.stderr)")

            // A barrier: a post on B after the import reaches A after anything B's bridge would have sent back.
            try await onB.post("build.marker", userInfo: [:])
            let barrier = try await eventually(timeout: .seconds(10)) { !seenOnA.named("build.marker").isEmpty }
            #expect(barrier)

            let onBDone = seenOnB.named("build.done")
            #expect(onBDone.count == 1)
            #expect(onBDone.first?.sender.pid == b.bridge.pid, "local subscribers see the bridge as the sender")
            // The origin travels as metadata; the payload arrives byte for byte, as posted on A.
            let origin = onBDone.first?.origin
            #expect(origin?.host == "hostA")
            #expect(origin?.daemon == String(a.daemon.pid))
            #expect(origin.map { $0.sequence > 0 } == true)
            #expect(onBDone.first?.payload == Array(#"{"ok":true}"#.utf8))
            // A's subscriber saw its own post once, and never the copy B's bridge posted.
            #expect(seenOnA.named("build.done").count == 1)
            #expect(seenOnA.named("build.done").first?.sender.pid != a.bridge.pid)
            await onA.close()
            await onB.close()
        }
    }

    @Test(.requires("mosquitto"), .hangGuard)
    func postsMatchingDifferentOrOverlappingExportsReachBOnceInTheirOrder() async throws {
        // a.x matches two of A's exports; a.* and b.* posts come in turn, as fast as one connection posts them.
        try await withTwoHosts(a: (["a.*", "b.*", "a.x"], []), b: ([], ["a.*", "b.*"])) { a, b in
            let onA = try await a.connect()
            let onB = try await b.connect()
            let seenOnB = Received(try await onB.notifications(matching: ["a.*", "b.*"]))
            var posted: [String] = []
            for index in 0..<60 {
                let name = ["a.x", "b.y", "b.z", "a.w"][index % 4]
                posted.append(name)
                try await onA.post(name, userInfo: ["i": .number(Double(index))])
            }
            let arrived = try await eventually(timeout: .seconds(20)) { seenOnB.all.count >= posted.count }
            #expect(arrived, "B got \(seenOnB.all.count) of \(posted.count); bridge A: \(a.bridge.stderr)")
            // One more, then nothing beyond it: a second copy of an a.x would have come before it.
            try await onA.post("b.end")
            let ended = try await eventually(timeout: .seconds(10)) { !seenOnB.named("b.end").isEmpty }
            #expect(ended)
            let received = seenOnB.all
            #expect(received.map(\.name) == posted + ["b.end"])
            #expect(received.dropLast().map { $0.userInfo?["i"]?.doubleValue } == (0..<60).map { Double($0) })
            await onA.close()
            await onB.close()
        }
    }

    @Test(.requires("mosquitto"), .hangGuard)
    func retainedValueSetOnAIsReadOnBAndClearingItClearsIt() async throws {
        try await withTwoHosts(a: (["build.**"], []), b: ([], ["build.**"])) { a, b in
            let onA = try await a.connect()
            let onB = try await b.connect()

            try await onA.post("build.state", userInfo: ["v": 1], retain: true)
            let set = try await eventually(timeout: .seconds(10)) {
                try await onB.retainedValue(of: "build.state")?.userInfo?["v"]?.doubleValue == 1
            }
            #expect(set, "B has no retained build.state; bridge B: \(b.bridge.stderr)")
            let state = try await run("herald", ["get", "build.state"], environment: b.daemon.environment)
            #expect(state.status == 0)
            #expect(state.stdout.contains("\"v\":1"))

            try await onA.post("build.state", payload: [], retain: true)
            let cleared = try await eventually(timeout: .seconds(10)) {
                try await onB.retainedValue(of: "build.state") == nil
            }
            #expect(cleared, "B still has build.state; bridge B: \(b.bridge.stderr)")
            // As `herald get` says it: nothing printed, status 1.
            let gone = try await run("herald", ["get", "build.state"], environment: b.daemon.environment)
            #expect(gone.status == 1)
            #expect(gone.stdout.isEmpty)
            await onA.close()
            await onB.close()
        }
    }

    @Test(.requires("mosquitto"), .hangGuard)
    func sigkillOfABridgeTurnsItsHostOfflineOnTheOtherHost() async throws {
        try await withTwoHosts(a: (["x.**"], []), b: ([], ["x.**"])) { a, b in
            let onB = try await b.connect()
            let online = try await eventually(timeout: .seconds(10)) {
                try await onB.retainedValue(of: "hosts.hostA.online")?.payload == Array("true".utf8)
            }
            #expect(online)
            a.bridge.signal(SIGKILL)
            let offline = try await eventually(timeout: .seconds(10)) {
                try await onB.retainedValue(of: "hosts.hostA.online")?.payload == Array("false".utf8)
            }
            #expect(offline, "hosts.hostA.online did not become false; bridge B: \(b.bridge.stderr)")
            let state = try await onB.retainedValue(of: "bridge.mqtt.hostB")
            #expect(state?.userInfo?["connected"]?.boolValue == true)
            await onB.close()
        }
    }

    @Test(.requires("mosquitto"), .hangGuard)
    func threeHostsBridgingEverythingDeliverEveryPostOnceInOrder() async throws {
        let broker = try await TestBroker()
        var hosts: [BridgedHost] = []
        do {
            for id in ["hostA", "hostB", "hostC"] {
                hosts.append(try await BridgedHost(hostID: id, broker: broker.url, exports: ["**"], imports: ["**"]))
            }
            for host in hosts { try await host.waitUntilBridging(exports: 1) }
            var clients: [Herald] = []
            var received: [Received] = []
            for host in hosts {
                let client = try await host.connect()
                clients.append(client)
                received.append(Received(try await client.notifications(matching: "load.**")))
            }
            let posts = 1000
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (index, client) in clients.enumerated() {
                    let name = "load.\(hosts[index].hostID)"
                    group.addTask {
                        for i in 0..<posts { try await client.post(name, userInfo: ["i": .number(Double(i))]) }
                        try await client.flush()
                    }
                }
                try await group.waitForAll()
            }
            let total = posts * hosts.count
            let complete = try await eventually(timeout: .seconds(60)) {
                received.allSatisfy { $0.all.count >= total }
            }
            #expect(complete, "received \(received.map(\.all.count)) of \(total) each")
            // A little longer, so a duplicate arriving late is seen.
            try await Task.sleep(for: .milliseconds(300))
            for (index, seen) in received.enumerated() {
                #expect(seen.all.count == total, "host \(hosts[index].hostID) received \(seen.all.count)")
                for origin in hosts {
                    let values = seen.named("load.\(origin.hostID)").compactMap { $0.userInfo?["i"]?.doubleValue }
                    #expect(
                        values == (0..<posts).map(Double.init),
                        "host \(hosts[index].hostID) got \(values.count) posts of \(origin.hostID), not each once in order"
                    )
                }
            }
            for client in clients { await client.close() }
        } catch {
            Issue.record(error)
        }
        for host in hosts { await host.stop() }
        await broker.process.stop()
    }

    /// A real broker restart at QoS 1, on the same port: mosquitto with persistence saves the bridges' sessions
    /// when it stops and restores them (it does so only for sessions begun without Clean Start, which is why the
    /// bridge never sets it), so B's subscription holds what A sends whether or not B is back yet. What
    /// waited in A's queue is delivered once and in order, and the drop counter is exactly what the bound dropped:
    /// 200 of the 300 posted while the broker was away with a queue of 100, none with a queue of 1,000.
    @Test(.requires("mosquitto"), .hangGuard, arguments: [(100, 200), (1000, 0)])
    func brokerRestartLosesNothingQueuedAndCountsExactlyWhatTheQueueDropped(
        queueLimit: Int,
        dropped: Int
    ) async throws {
        var broker = try await TestBroker(persistent: true)
        let a = try await BridgedHost(
            hostID: "hostA",
            broker: broker.url,
            exports: ["load.**"],
            imports: [],
            extra: ["--queue-limit", "\(queueLimit)", "--verbose"]
        )
        let b = try await BridgedHost(hostID: "hostB", broker: broker.url, exports: [], imports: ["load.**"])
        do {
            try await a.waitUntilBridging(exports: 1)
            try await b.waitUntilBridging(exports: 0)
            let onA = try await a.connect()
            let onB = try await b.connect()
            let seen = Received(try await onB.notifications(matching: "load.**"))
            // Fewer than the queue holds: while the broker is there, nothing is dropped.
            for i in 0..<50 { try await onA.post("load.a", userInfo: ["i": .number(Double(i))]) }
            let first = try await eventually(timeout: .seconds(20)) { seen.all.count == 50 }
            #expect(first, "B received \(seen.all.count) of the first 50")

            // The broker goes away; what A posts meanwhile waits in its bridge's queue.
            await broker.process.stop()
            let noticed = try await eventually(timeout: .seconds(10)) {
                a.bridge.stderrLines.contains { $0.contains("retrying in") }
            }
            #expect(noticed)
            for i in 50..<350 { try await onA.post("load.a", userInfo: ["i": .number(Double(i))]) }
            let queued = try await eventually(timeout: .seconds(20)) {
                a.bridge.stderrLines.filter { $0.contains("info: export load.a") }.count == 350
            }
            #expect(queued, "A's bridge did not take all 350 posts")
            broker = try await broker.restarted()

            let rest = try await eventually(timeout: .seconds(40)) { seen.all.count >= 350 - dropped }
            let got = seen.named("load.a").compactMap { $0.userInfo?["i"]?.doubleValue }
            #expect(
                rest,
                "B received \(got); bridge A: \(a.bridge.stderr) bridge B: \(b.bridge.stderr) broker: \(broker.process.stderr)"
            )
            try await Task.sleep(for: .milliseconds(300))
            let values = seen.named("load.a").compactMap { $0.userInfo?["i"]?.doubleValue }
            // The first 50 before the restart, then what the queue kept, the newest: the oldest were dropped.
            let expected: [Double] = Array(0..<50).map(Double.init) + Array((50 + dropped)..<350).map(Double.init)
            #expect(values == expected)
            let state = try await eventually(timeout: .seconds(10)) {
                let value = try await onA.retainedValue(of: "bridge.mqtt.hostA")
                return value?.userInfo?["connected"]?.boolValue == true
                    && value?.userInfo?["dropped"]?.doubleValue == Double(dropped)
            }
            let last = try await onA.retainedValue(of: "bridge.mqtt.hostA")?.userInfo
            #expect(state, "bridge.mqtt.hostA: \(String(describing: last))")
            await onA.close()
            await onB.close()
        } catch {
            Issue.record(error)
        }
        await a.stop()
        await b.stop()
        await broker.process.stop()
    }

    @Test(.requires("mosquitto"), .hangGuard)
    func bridgeReconnectsToARestartedHeralddAndSubscribesAgain() async throws {
        let broker = try await TestBroker()
        let a = try await BridgedHost(hostID: "hostA", broker: broker.url, exports: ["build.**"], imports: [])
        let b = try await BridgedHost(hostID: "hostB", broker: broker.url, exports: [], imports: ["build.**"])
        var restarted: TestDaemon?
        do {
            try await a.waitUntilBridging(exports: 1)
            try await b.waitUntilBridging(exports: 0)
            let onB = try await b.connect()
            let seen = Received(try await onB.notifications(matching: "build.**"))

            _ = try await a.daemon.stop()
            let daemon = try await TestDaemon.start(directory: a.daemon.directory)
            restarted = daemon
            let onA = try await Herald.connect(socketPath: daemon.socketPath, options: .init(reconnects: false))
            // The bridge's subscription comes back on its own schedule: post until one is exported.
            var posted = 0
            let arrived = try await eventually(timeout: .seconds(20)) {
                posted += 1
                try await onA.post("build.after", userInfo: ["n": .number(Double(posted))])
                try await Task.sleep(for: .milliseconds(50))
                return !seen.named("build.after").isEmpty
            }
            #expect(arrived, "nothing from the restarted daemon reached B; bridge A: \(a.bridge.stderr)")
            #expect(a.bridge.exitStatus == nil)
            #expect(a.bridge.stderr.contains("lost the connection to heraldd"))
            await onA.close()
            await onB.close()
        } catch {
            Issue.record(error)
        }
        await a.stop()
        _ = try? await restarted?.stop()
        await b.stop()
        await broker.process.stop()
    }

    @Test(.requires("mosquitto"), .hangGuard)
    func heralddRunsTheBridgeAsAPluginAndBringsItsHostBackOnlineAfterSIGKILL() async throws {
        let broker = try await TestBroker()
        let b = try await BridgedHost(hostID: "hostB", broker: broker.url, exports: [], imports: ["x.**"])
        let config = TemporaryDirectory(prefix: "cfg")
        let plugins = config.path + "/herald/plugins"
        try FileManager.default.createDirectory(atPath: plugins, withIntermediateDirectories: true)
        try """
        [Plugin]
        Exec=\(TestBinaries.path("herald-mqtt-bridge")) --broker \(broker.url) --host-id hostA --export x.**
        Activation=start
        Restart=on-failure
        """.write(toFile: plugins + "/mqtt.plugin", atomically: true, encoding: .utf8)
        let data = TemporaryDirectory(prefix: "data")
        var daemonA: TestDaemon?
        do {
            try await b.waitUntilBridging(exports: 0)
            let onB = try await b.connect()
            let presence = Received(try await onB.notifications(matching: "hosts.hostA.online"))
            let daemon = try await TestDaemon.start(
                plugins: true,
                environment: ["XDG_CONFIG_HOME": config.path, "XDG_DATA_DIRS": data.path]
            )
            daemonA = daemon
            let payloads = { presence.all.map { String(decoding: $0.payload, as: UTF8.self) } }
            let online = try await eventually(timeout: .seconds(20)) { payloads().last == "true" }
            #expect(online, "hosts.hostA.online: \(payloads()); heraldd: \(daemon.process.stderr)")

            let onA = try await Herald.connect(socketPath: daemon.socketPath, options: .init(reconnects: false))
            let state = try await onA.retainedValue(of: "herald.plugin.mqtt")
            let pid = try #require(state?.userInfo?["pid"]?.doubleValue.map { Int32($0) })
            kill(pid, SIGKILL)
            let back = try await eventually(timeout: .seconds(20)) {
                payloads().suffix(2) == ["false", "true"]
            }
            #expect(back, "hosts.hostA.online went \(payloads()), not false then true again")
            let restarted = try await onA.retainedValue(of: "herald.plugin.mqtt")
            #expect(restarted?.userInfo?["restarts"]?.doubleValue == 1)
            await onA.close()
            await onB.close()
        } catch {
            Issue.record(error)
        }
        _ = try? await daemonA?.stop()
        await b.stop()
        await broker.process.stop()
    }

    /// A fake broker that answers CONNECT with malformed packets: the bridge must disconnect with the reason code,
    /// log it, and connect again, without crashing.
    @Test(.hangGuard)
    func hostileBrokerGetsADisconnectAndARetryNotACrash() async throws {
        let listener = try TCPSocket.listen(host: "127.0.0.1", port: 0)
        let host = try await BridgedHost(hostID: "hostH", fakeBroker: listener)
        do {
            let attacks: [([UInt8], String)] = [
                ([0x20, 0x03, 0x02, 0x00, 0x00], "0x81 Malformed Packet"),  // CONNACK with a reserved flag
                ([0x30, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F], "0x81 Malformed Packet"),  // a 5-byte Remaining Length
                ([0x30, 0xFF, 0xFF, 0xFF, 0x7F], "0x95 Packet too large"),  // 256 MiB announced
                ([0x20, 0x06, 0x00, 0x00, 0x03, 0x21, 0x00, 0x00], "0x82 Protocol Error"),  // Receive Maximum 0
            ]
            for (index, (bytes, code)) in attacks.enumerated() {
                let connection = try await Self.accept(listener)
                let connect = try await Self.read(connection, atLeast: 2)
                #expect(connect.first == 0x10, "attempt \(index): the bridge's first packet is not CONNECT")
                try bytes.withUnsafeBytes { raw in _ = try connection.send(raw) }
                let answer = try await Self.read(connection, atLeast: 3)
                #expect(Array(answer.prefix(2)) == [0xE0, 0x01], "attempt \(index): no DISCONNECT: \(answer)")
                connection.close()
                let logged = try await eventually(timeout: .seconds(10)) {
                    host.bridge.stderrLines.filter { $0.contains("malformed input from the broker") }.count
                        == index + 1
                }
                #expect(logged, "attempt \(index): \(host.bridge.stderr)")
                #expect(host.bridge.stderrLines.last { $0.contains("malformed") }?.contains(code) == true)
                #expect(host.bridge.exitStatus == nil, "the bridge exited: \(host.bridge.stderr)")
            }
        } catch {
            Issue.record(error)
        }
        listener.close()
        await host.stop()
    }

    /// A broker that accepts the connection and then says nothing: without CONNACK the bridge gives up after its
    /// Keep Alive; after CONNACK it sends PINGREQ after half its Keep Alive, gives up after a whole one without
    /// PINGRESP, and connects again.
    @Test(.hangGuard)
    func silentBrokerIsLeftAfterTheKeepAliveAndRetried() async throws {
        let listener = try TCPSocket.listen(host: "127.0.0.1", port: 0)
        let host = try await BridgedHost(hostID: "hostS", fakeBroker: listener, extra: ["--keep-alive", "2"])
        do {
            // First it says nothing at all, not even CONNACK: the bridge gives up after its Keep Alive.
            let mute = try await Self.accept(listener)
            _ = try await Self.read(mute, atLeast: 2)
            let connection = try await Self.accept(listener)
            mute.close()
            let gaveUp = try await eventually { host.bridge.stderr.contains("did not answer CONNECT") }
            #expect(gaveUp)
            _ = try await Self.read(connection, atLeast: 2)
            try ([0x20, 0x03, 0x00, 0x00, 0x00] as [UInt8]).withUnsafeBytes { raw in _ = try connection.send(raw) }
            _ = try await Self.read(connection, atLeast: 1)  // its SUBSCRIBE and PUBLISH
            let ping = try await eventually(timeout: .seconds(10)) {
                var bytes = [UInt8](repeating: 0, count: 256)
                let result = try bytes.withUnsafeMutableBytes { raw in try connection.read(into: raw) }
                guard let count = result.value else { return false }
                return bytes[0..<count].contains(0xC0)
            }
            #expect(ping, "no PINGREQ")
            let again = try await Self.accept(listener)
            again.close()
            let leftIt = try await eventually { host.bridge.stderr.contains("did not answer PINGREQ") }
            #expect(leftIt)
            connection.close()
        } catch {
            Issue.record(error)
        }
        listener.close()
        await host.stop()
    }

    struct NotConnected: Error, CustomStringConvertible {
        var description: String { "the bridge did not connect within 60 s" }
    }

    static func accept(_ listener: borrowing FileDescriptor) async throws -> FileDescriptor {
        // 60 s: in a whole parallel run on two cores a bridge's start and reconnect took over 10 s.
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            if let connection = try TCPSocket.accept(listener) {
                try connection.setNonBlocking(false)
                try connection.setReceiveTimeout(seconds: 10)
                return connection
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw NotConnected()
    }

    /// Reads until `count` bytes or end of file (the socket has a 10 s receive timeout).
    static func read(_ connection: borrowing FileDescriptor, atLeast count: Int) async throws -> [UInt8] {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while bytes.count < count {
            let result = try buffer.withUnsafeMutableBytes { raw in try connection.read(into: raw) }
            guard let read = result.value, read > 0 else { break }
            bytes += buffer[0..<read]
        }
        return bytes
    }
}
