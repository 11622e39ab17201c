import Foundation
import HeraldDBus
import HeraldDBusClient
import HeraldPosix
import HeraldTestSupport
import Testing

/// The client against a fake bus that misbehaves: each time it must refuse, disconnect with a reason, reconnect and
/// keep working, within its memory bounds.
@Suite struct HostileBusTests {
    static func options() -> DBusClient.Options {
        var options = DBusClient.Options()
        options.minimumReconnectDelay = .milliseconds(10)
        options.maximumReconnectDelay = .milliseconds(100)
        options.maximumMessageLength = 1 << 20
        options.logger = Logger(label: "hostile-bus-test", level: .notice)
        return options
    }

    /// A signal with a valid layout whose bytes the test then spoils.
    static func signal(_ body: [DBusValue] = [.string("x")]) throws -> [UInt8] {
        var message = try DBusMessage.signal(path: "/a", interface: "org.example.Flood", member: "Tick", body: body)
        message.serial = 5
        return try message.encoded()
    }

    static func trigger(_ client: DBusClient, timeout: Duration? = nil) async -> DBusClientError? {
        do {
            _ = try await client.call(
                destination: "org.example.Fake",
                path: "/",
                interface: "org.example.Fake",
                member: "Trigger",
                timeout: timeout
            )
            return nil
        } catch {
            return error
        }
    }

    static func waitUntilConnected(_ client: DBusClient, bus: FakeBus, connections: Int) async throws {
        // The condition: the fake bus accepted the new connection and the client finished its Hello (every 10 ms).
        for _ in 0..<1000 where !(client.isConnected && bus.connections.load(ordering: .relaxed) >= connections) {
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    static let malformed: [(String, @Sendable () throws -> [UInt8], String)] = [
        (
            "wrong padding",
            {
                var bytes = try signal()
                // The PATH field "/a" ends at 27; bytes 27 to 31 pad the next field to 8.
                bytes[28] = 1
                return bytes
            },
            "badPadding"
        ),
        (
            "a 200 MiB length",
            {
                var bytes = try signal()
                let length = UInt32(200 * 1024 * 1024).littleEndian
                withUnsafeBytes(of: length) { bytes.replaceSubrange(4..<8, with: $0) }
                return bytes
            },
            "messageTooLarge"
        ),
        (
            "a signature nested 100 deep",
            {
                // A valid signal whose body signature is 101 'y's, then the signature is turned into 100 'a's and a 'y'.
                var bytes = try signal(Array(repeating: .byte(1), count: 101))
                let ys = [UInt8](repeating: UInt8(ascii: "y"), count: 101)
                for start in 0...(bytes.count - 101) where Array(bytes[start..<start + 101]) == ys {
                    for index in start..<start + 100 { bytes[index] = UInt8(ascii: "a") }
                    break
                }
                return bytes
            },
            "nestingTooDeep"
        ),
        (
            "a body not matching its signature",
            {
                // Body "uu", signature field turned into "u": four bytes of the body are left over.
                var bytes = try signal([.uint32(1), .uint32(2)])
                let field: [UInt8] = [8, 1, UInt8(ascii: "g"), 0, 2, UInt8(ascii: "u"), UInt8(ascii: "u"), 0]
                for start in 0...(bytes.count - 8) where Array(bytes[start..<start + 8]) == field {
                    bytes.replaceSubrange(start + 4..<start + 8, with: [1, UInt8(ascii: "u"), 0, 0])
                    bytes[12] -= 1  // the header fields' array is a byte shorter; that byte becomes padding
                    break
                }
                return bytes
            },
            "bodyMismatch"
        ),
    ]

    @Test(arguments: malformed.map(\.0))
    func refusesDisconnectsAndReconnects(name: String) async throws {
        let (_, payload, expected) = Self.malformed.first { $0.0 == name }!
        let bytes = try payload()
        let directory = TemporaryDirectory()
        let bus = try FakeBus(path: directory.file("bus")) { _ in [bytes] }
        defer { bus.close() }
        let client = try await DBusClient.connect(
            to: try BusAddress(parsing: "unix:path=\(bus.path)"),
            options: Self.options()
        )
        defer { client.close() }
        let error = await Self.trigger(client)
        #expect(error?.code == .disconnected)
        try await Self.waitUntilConnected(client, bus: bus, connections: 2)
        #expect(client.isConnected)
        let (count, reason) = client.disconnections
        #expect(count == 1)
        #expect(reason?.contains(expected) == true, "\(reason ?? "no reason")")
        // And it works again: the fake bus answers a plain call with an empty return.
        #expect(
            try await client.call(
                destination: "org.example.Fake",
                path: "/",
                interface: "org.example.Fake",
                member: "Ping"
            )
                == []
        )
    }

    @Test func callWhoseReplyNeverComesTimesOut() async throws {
        let directory = TemporaryDirectory()
        let bus = try FakeBus(path: directory.file("bus")) { _ in [] }
        defer { bus.close() }
        let client = try await DBusClient.connect(
            to: try BusAddress(parsing: "unix:path=\(bus.path)"),
            options: Self.options()
        )
        defer { client.close() }
        do {
            _ = try await client.call(
                destination: "org.example.Fake",
                path: "/",
                interface: "org.example.Fake",
                member: "Silent",
                timeout: .milliseconds(200)
            )
            Issue.record("a call nobody answers returned")
        } catch {
            #expect(error.code == .timedOut)
        }
        #expect(client.isConnected)
    }

    static func residentKiB() -> Int {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0
    }

    @Test func floodOfAMillionSignalsIsDroppedAndCountedWithinBounds() async throws {
        // The issue's million runs alone (.ci/run, HERALD_TEST_ALONE=1): in a debug build it costs a core for about
        // two minutes, which in the whole parallel run on two cores slowed every other test. There, 100,000.
        let alone = ProcessInfo.processInfo.environment["HERALD_TEST_ALONE"] == "1"
        let count = alone ? 1_000_000 : 100_000
        let one = try Self.signal()
        let directory = TemporaryDirectory()
        let bus = try FakeBus(path: directory.file("bus")) { call in
            var chunk: [UInt8] = []
            chunk.reserveCapacity(one.count * 10_000)
            for _ in 0..<10_000 { chunk += one }
            var reply = DBusMessage.methodReturn(to: call)
            reply.serial = 99
            // The same chunk a hundred times: the copies share one buffer, so the fake bus holds about 1 MB.
            return Array(repeating: chunk, count: count / 10_000) + [(try? reply.encoded()) ?? []]
        }
        defer { bus.close() }
        let client = try await DBusClient.connect(
            to: try BusAddress(parsing: "unix:path=\(bus.path)"),
            options: Self.options()
        )
        defer { client.close() }
        let signals = try await client.signals(matching: try MatchRule(interface: "org.example.Flood"), bufferSize: 16)
        let before = Self.residentKiB()
        // The reply comes after the flood: when it is in, every signal was read.
        // A debug build decodes some 30 000 signals a second on a loaded machine: the reply may take half a minute.
        #expect(await Self.trigger(client, timeout: .seconds(300)) == nil)
        #expect(signals.droppedCount == count - 16)
        #expect(client.disconnections.count == 0)
        // About 100 MB went through; the client holds its 64 KiB read buffer, the decoder and 16 buffered signals.
        // The RSS is the whole test process's, which the other tests of a parallel run grow as well (by 90 MB in
        // one), so the bound is checked where the test has the process to itself: .ci/run runs it alone with
        // HERALD_TEST_ALONE=1. In the whole run the exact drop count above shows the buffer held to 16.
        let grown = Self.residentKiB() - before
        if alone {
            #expect(grown < 32 * 1024, "RSS grew by \(grown) KiB")
        } else {
            print("floodOfAMillionSignals: RSS grew by \(grown) KiB (checked only with HERALD_TEST_ALONE=1)")
        }
    }
}
