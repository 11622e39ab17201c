import Foundation
import Herald
import HeraldMQTT
import HeraldPosix
import HeraldTestSupport
import Testing

/// One accepted connection to the bridge, read packet by packet.
final class FakeBrokerSession {
    let connection: FileDescriptor
    var decoder = PacketDecoder()
    /// Every packet read so far, in order.
    var packets: [Packet] = []

    init(_ connection: consuming FileDescriptor) {
        self.connection = connection
    }

    /// Reads until a packet satisfies `wanted` and returns it; nil when the connection ends or goes quiet for
    /// the socket's 10 s receive timeout.
    func next(where wanted: (Packet) -> Bool) throws -> Packet? {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            while let packet = try decoder.next() {
                packets.append(packet)
                if wanted(packet) { return packet }
            }
            let result = try buffer.withUnsafeMutableBytes { raw in try connection.read(into: raw) }
            guard let count = result.value, count > 0 else { return nil }
            decoder.append(contentsOf: buffer[0..<count])
        }
    }

    /// Every packet that arrives within `milliseconds`, read as it comes: for what must not be sent meanwhile.
    func packets(within milliseconds: Int) throws -> [Packet] {
        let deadline = ContinuousClock.now + .milliseconds(milliseconds)
        let first = packets.count
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while case let left = deadline - .now, left > .zero {
            let wait = Int32(left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000)
            guard try connection.waitForInput(orFrom: -1, timeoutMilliseconds: max(wait, 1)).this else { continue }
            let result = try buffer.withUnsafeMutableBytes { raw in try connection.read(into: raw) }
            guard let count = result.value, count > 0 else { break }
            decoder.append(contentsOf: buffer[0..<count])
            while let packet = try decoder.next() { packets.append(packet) }
        }
        return Array(packets[first...])
    }

    func send(_ packet: Packet) throws {
        try packet.encode().withUnsafeBytes { raw in _ = try connection.send(raw) }
    }

    /// Reads the CONNECT and answers CONNACK with `properties`.
    func accept(sessionPresent: Bool, properties: Properties) throws {
        let connect = try next { $0.type == .connect }
        #expect(connect != nil, "the bridge did not send CONNECT")
        try send(.connack(.init(sessionPresent: sessionPresent, properties: properties)))
    }

    /// The PUBLISH packets read so far to `topic`.
    func publishes(to topic: String) -> [Packet.Publish] {
        packets.compactMap { packet in
            if case .publish(let publish) = packet, publish.topic == topic { return publish }
            return nil
        }
    }
}

/// herald-mqtt-bridge against a small broker written in the test, for what a real mosquitto will not do on demand:
/// withhold a PUBACK, announce a small Maximum Packet Size, flood it with QoS 0; and its command line.
@Suite(.serialized) struct MQTTBridgeFakeBrokerTests {
    static func publish(_ packet: Packet, to topic: String) -> Packet.Publish? {
        if case .publish(let publish) = packet, publish.topic == topic { return publish }
        return nil
    }

    /// A QoS 1 message the broker never acknowledged is sent again on the next connection, with DUP set and the
    /// same Packet Identifier (§4.4); a message larger than the broker's Maximum Packet Size is never sent, and is
    /// counted as tooLarge in the bridge's state.
    @Test(.hangGuard)
    func unacknowledgedQoS1IsResentWithDUPAndTheTooLargeNeverSent() async throws {
        let listener = try TCPSocket.listen(host: "127.0.0.1", port: 0)
        let host = try await BridgedHost(hostID: "hostF", fakeBroker: listener, exports: ["x.**"], imports: [])
        var properties = Properties()
        properties.maximumPacketSize = 512
        properties.receiveMaximum = 10
        do {
            let first = FakeBrokerSession(try await MQTTBridgeTests.accept(listener))
            try first.accept(sessionPresent: false, properties: properties)
            let exporting = try await eventually(timeout: .seconds(20)) {
                host.bridge.stderr.contains("notice: exporting x.**")
            }
            #expect(exporting, "\(host.bridge.stderr)")
            let onF = try await host.connect()
            try await onF.post("x.big", payload: [UInt8](repeating: 0x61, count: 2000))
            try await onF.post("x.small", userInfo: ["n": 1])
            try await onF.flush()

            let sent = try #require(
                try first.next { Self.publish($0, to: "herald/x/small") != nil }.flatMap {
                    Self.publish($0, to: "herald/x/small")
                },
                "no PUBLISH of x.small: \(first.packets.map(\.type)); \(host.bridge.stderr)"
            )
            #expect(sent.qos == .atLeastOnce)
            #expect(!sent.dup)
            #expect(sent.packetIdentifier != 0)
            // No PUBACK: the link drops with the message in flight.
            try first.connection.shutdown(read: true, write: true)

            let second = FakeBrokerSession(try await MQTTBridgeTests.accept(listener))
            try second.accept(sessionPresent: true, properties: properties)
            let again = try #require(
                try second.next { Self.publish($0, to: "herald/x/small") != nil }.flatMap {
                    Self.publish($0, to: "herald/x/small")
                },
                "x.small was not sent again: \(second.packets.map(\.type)); \(host.bridge.stderr)"
            )
            #expect(again.dup, "the resent PUBLISH has no DUP")
            #expect(again.packetIdentifier == sent.packetIdentifier)
            #expect(again.payload == sent.payload)
            try second.send(.puback(.init(packetIdentifier: again.packetIdentifier)))

            // Never sent on either connection, and counted.
            #expect(first.publishes(to: "herald/x/big").isEmpty)
            #expect(second.publishes(to: "herald/x/big").isEmpty)
            #expect(host.bridge.stderr.contains("past the broker's Maximum Packet Size of 512"))
            let counted = try await eventually(timeout: .seconds(10)) {
                try await onF.retainedValue(of: "bridge.mqtt.hostF")?.userInfo?["tooLarge"]?.doubleValue == 1
            }
            let state = try await onF.retainedValue(of: "bridge.mqtt.hostF")?.userInfo
            #expect(counted, "bridge.mqtt.hostF: \(String(describing: state))")
            await onF.close()
            try second.connection.shutdown(read: true, write: true)
        } catch {
            Issue.record(error, "bridge stderr:\n\(host.bridge.stderr)")
        }
        listener.close()
        await host.stop()
    }

    /// A QoS 1 message is acknowledged to the broker only once its post is written to heraldd's socket, so killing
    /// the bridge never loses a message the broker counts as delivered. heraldd is stopped (SIGSTOP) while the broker
    /// sends 120 messages of 8 KiB: the bridge's posts fill heraldd's socket, then the library's outgoing buffer;
    /// the bridge is SIGKILLed, heraldd resumes, and every message the bridge acknowledged must arrive. Acknowledging
    /// once `post` returned (queued, not written) loses those still in the bridge's buffer.
    @Test(.hangGuard)
    func everyAcknowledgedQoS1MessageSurvivesAKillOfTheBridge() async throws {
        let listener = try TCPSocket.listen(host: "127.0.0.1", port: 0)
        let host = try await BridgedHost(hostID: "hostP", fakeBroker: listener)
        do {
            let session = FakeBrokerSession(try await MQTTBridgeTests.accept(listener))
            try session.accept(sessionPresent: false, properties: Properties())
            _ = try session.next { $0.type == .subscribe }
            let onP = try await host.connect()
            let seen = Received(try await onP.notifications(matching: "x.**"))

            host.daemon.process.signal(SIGSTOP)
            let padding = String(repeating: "p", count: 8192)
            var burst: [UInt8] = []
            for i in 1...120 {
                let payload = Array("{\"i\":\(i),\"pad\":\"\(padding)\"}".utf8)
                burst += try Packet.publish(
                    .init(topic: "herald/x/n", payload: payload, qos: .atLeastOnce, packetIdentifier: UInt16(i))
                ).encode()
            }
            try burst.withUnsafeBytes { raw in try session.connection.writeAll(raw) }
            let acknowledged = try session.packets(within: 2000).compactMap { packet -> Int? in
                if case .puback(let ack) = packet { return Int(ack.packetIdentifier) }
                return nil
            }
            host.bridge.signal(SIGKILL)
            host.daemon.process.signal(SIGCONT)

            #expect(!acknowledged.isEmpty, "nothing was acknowledged: \(host.bridge.stderr)")
            #expect(acknowledged.count < 120, "all 120 acknowledged while heraldd was stopped")
            let arrivedAll = try await eventually(timeout: .seconds(10)) {
                let arrived = Set(seen.named("x.n").compactMap { $0.userInfo?["i"]?.doubleValue }.map { Int($0) })
                return Set(acknowledged).isSubset(of: arrived)
            }
            let arrived = Set(seen.named("x.n").compactMap { $0.userInfo?["i"]?.doubleValue }.map { Int($0) })
            #expect(
                arrivedAll,
                "acknowledged but lost: \(Set(acknowledged).subtracting(arrived).sorted()) of \(acknowledged.count)"
            )
            await onP.close()
            try session.connection.shutdown(read: true, write: true)
        } catch {
            host.daemon.process.signal(SIGCONT)
            Issue.record(error, "bridge stderr:\n\(host.bridge.stderr)")
        }
        listener.close()
        await host.stop()
    }

    /// A broker that sends QoS 0 messages faster than the bridge posts them: past --queue-limit they are dropped as
    /// they are read, and counted exactly (what arrived plus what was dropped is what was sent); QoS 1 is never
    /// dropped, and the bridge stays up.
    @Test(.hangGuard)
    func qos0FloodPastTheImportBoundIsDroppedAndCountedExactly() async throws {
        let listener = try TCPSocket.listen(host: "127.0.0.1", port: 0)
        let host = try await BridgedHost(hostID: "hostQ", fakeBroker: listener, extra: ["--queue-limit", "1"])
        do {
            let session = FakeBrokerSession(try await MQTTBridgeTests.accept(listener))
            try session.accept(sessionPresent: false, properties: Properties())
            _ = try session.next { $0.type == .subscribe }
            let onQ = try await host.connect()
            let seen = Received(try await onQ.notifications(matching: "x.**"))

            // One burst: each read of the bridge's link takes hundreds of them while the loop has taken none.
            let count = 5000
            var burst: [UInt8] = []
            for i in 0..<count {
                burst += try Packet.publish(.init(topic: "herald/x/n", payload: Array("{\"i\":\(i)}".utf8))).encode()
            }
            burst += try Packet.publish(
                .init(topic: "herald/x/end", payload: Array("{}".utf8), qos: .atLeastOnce, packetIdentifier: 1)
            ).encode()
            try burst.withUnsafeBytes { raw in try session.connection.writeAll(raw) }

            let ended = try await eventually(timeout: .seconds(20)) { !seen.named("x.end").isEmpty }
            #expect(ended, "the QoS 1 message after the flood never arrived: \(host.bridge.stderr)")
            let arrived = seen.named("x.n").count
            #expect(arrived >= 1 && arrived < count, "\(arrived) of \(count) arrived")
            let values = seen.named("x.n").compactMap { $0.userInfo?["i"]?.doubleValue }
            #expect(values == values.sorted(), "what arrived is not in order")
            // The state is posted when the link ends.
            try session.connection.shutdown(read: true, write: true)
            let counted = try await eventually(timeout: .seconds(10)) {
                let state = try await onQ.retainedValue(of: "bridge.mqtt.hostQ")?.userInfo
                return state?["connected"]?.boolValue == false
                    && state?["importDropped"]?.doubleValue == Double(count - arrived)
            }
            let state = try await onQ.retainedValue(of: "bridge.mqtt.hostQ")?.userInfo
            #expect(counted, "\(arrived) arrived; bridge.mqtt.hostQ: \(String(describing: state))")
            let logged = try await eventually(timeout: .seconds(5)) {
                host.bridge.stderr.contains("importing cannot keep up")
            }
            #expect(logged)
            #expect(host.bridge.exitStatus == nil)
            await onQ.close()
        } catch {
            Issue.record(error, "bridge stderr:\n\(host.bridge.stderr)")
        }
        listener.close()
        await host.stop()
    }

    /// The broker's socket is read by the Herald's reader thread while heraldd is there, and by the bridge's own I/O
    /// thread while it is gone: either way the PINGRESPs are read. With a Keep Alive of 2 s the bridge sends PINGREQ
    /// once a second and gives up on the connection 2 s after one goes unanswered; were the socket left unread
    /// while heraldd is stopped (4 Keep Alives here), the bridge would connect again. After heraldd is back, a
    /// message from the broker reaches it, and the keep-alive still holds on the same connection.
    @Test(.hangGuard)
    func keepAliveHoldsWhileHeralddIsGoneAndAfterItReturns() async throws {
        let listener = try TCPSocket.listen(host: "127.0.0.1", port: 0)
        let host = try await BridgedHost(hostID: "hostK", fakeBroker: listener, extra: ["--keep-alive", "2"])
        var restarted: TestDaemon?
        do {
            let session = FakeBrokerSession(try await MQTTBridgeTests.accept(listener))
            try session.accept(sessionPresent: false, properties: Properties())
            func answerPings(_ count: Int, _ when: String) throws {
                for index in 1...count {
                    let ping = try session.next { $0.type == .pingreq }
                    #expect(ping != nil, "PINGREQ \(index) of \(count) \(when) never came: \(host.bridge.stderr)")
                    guard ping != nil else { return }
                    try session.send(.pingresp)
                }
            }
            try answerPings(2, "with heraldd")
            _ = try await host.daemon.stop()
            try answerPings(8, "while heraldd was gone")
            let daemon = try await TestDaemon.start(directory: host.daemon.directory)
            restarted = daemon
            let onA = try await Herald.connect(socketPath: daemon.socketPath, options: .init(reconnects: false))
            let seen = Received(try await onA.notifications(matching: "x.**"))
            // The bridge's Herald reconnects on its own schedule: publish until one is imported.
            var sent: UInt16 = 0
            let arrived = try await eventually(timeout: .seconds(30)) {
                sent += 1
                try session.send(.publish(.init(topic: "herald/x/back", payload: Array("{}".utf8))))
                try await Task.sleep(for: .milliseconds(100))
                return !seen.named("x.back").isEmpty
            }
            #expect(arrived, "nothing from the broker reached the restarted heraldd: \(host.bridge.stderr)")
            try answerPings(3, "after heraldd came back")
            #expect(!host.bridge.stderr.contains("did not answer PINGREQ"), "\(host.bridge.stderr)")
            if let again = try TCPSocket.accept(listener) {
                again.close()
                Issue.record("the bridge connected to the broker again: \(host.bridge.stderr)")
            }
            await onA.close()
        } catch {
            Issue.record(error)
        }
        listener.close()
        await host.bridge.stop()
        _ = try? await restarted?.stop()
        _ = try? await host.daemon.stop()
    }

    /// The bridge's command line follows every Herald executable's contract: help and version on stdout with
    /// status 0, a usage error on stderr with status 64, before anything connects.
    @Test func answersHelpVersionAndUsageErrorsLikeTheOtherExecutables() async throws {
        let help = try await run("herald-mqtt-bridge", ["--help"])
        #expect(help.status == 0)
        #expect(help.stdout.hasPrefix("OVERVIEW: "))
        #expect(help.stdout.contains("--export <pattern>"))
        let version = try await run("herald-mqtt-bridge", ["--version"])
        #expect(version.status == 0)
        #expect(version.stdout == "herald-mqtt-bridge 0.1.0\n")
        let bad = try await run("herald-mqtt-bridge", ["--export", "a"])
        #expect(bad.status == 64)
        #expect(bad.stderr.hasPrefix("Error: --broker is required\nUsage: herald-mqtt-bridge"))
    }
}
