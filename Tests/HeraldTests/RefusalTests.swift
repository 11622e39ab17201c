import Herald
import HeraldTestSupport
import Synchronization
import Testing

/// A refusal is an answer, not a disconnect (Protocols/wire.md, "Refusals and fatal errors"): against a version 2
/// daemon each call throws the refusal it gets and the Herald goes on; against a version 1 daemon, as before.
struct RefusalTests {
    @Test func aRefusedPostThrowsItsWireCodeAndTheHeraldGoesOn() async throws {
        try await withDaemon(["--max-retained", "1"]) { daemon in
            let herald = try await connect(daemon, reconnects: false)
            let stream = try await herald.notifications(matching: "s.*")
            try await herald.postAcknowledged("s.a", payload: Array("1".utf8), retain: true)
            let error = await heraldError {
                try await herald.postAcknowledged("s.b", payload: Array("2".utf8), retain: true)
            }
            #expect(error?.code == .refused)
            #expect(error?.wireCode == 18, "TOO_MANY_RETAINED")
            try await herald.post("s.c")
            let names = await collect(2, from: stream).map(\.name)
            #expect(names == ["s.a", "s.c"], "the refused post was not delivered, the later one was")
            #expect(herald.isConnected)
            // The store is not the refusal's: clearing, then posting another name, works.
            try await herald.postAcknowledged("s.a", payload: [], retain: true)
            try await herald.postAcknowledged("s.d", payload: Array("4".utf8), retain: true)
        }
    }

    @Test func aRefusedSubscriptionThrowsAndTheOtherSubscriptionsGoOn() async throws {
        try await withDaemon(["--max-pattern-cost", "2"]) { daemon in
            let herald = try await connect(daemon, reconnects: false)
            let kept = try await herald.notifications(matching: "a.*")
            let error = await heraldError { _ = try await herald.notifications(matching: "b.*") }
            #expect(error?.code == .refused)
            #expect(error?.wireCode == 23, "PATTERN_TOO_COMPLEX")
            try await herald.post("a.x")
            #expect(await collect(1, from: kept).map(\.name) == ["a.x"])
            // Nothing was left registered for the refused pattern: the cost it asked for is still free after the
            // first pattern goes.
            try await herald.flush()
            #expect(herald.isConnected)
            #expect(herald.refusedPosts == 0, "the withdrawn subscription sent no UNSUBSCRIBE to be refused")
        }
    }

    @Test func aRefusedGetThrows() async throws {
        try await withDaemon(["--max-name-bytes", "8"]) { daemon in
            let herald = try await connect(daemon, reconnects: false)
            let error = await heraldError { _ = try await herald.retainedValue(of: "a.longer.name") }
            #expect(error?.code == .refused)
            #expect(error?.wireCode == 7, "INVALID_NAME")
            try await herald.flush()
            #expect(herald.isConnected)
        }
    }

    @Test func aRefusedWillFailsTheConnectThatRegistersIt() async throws {
        try await withDaemon(["--max-wills", "0"]) { daemon in
            let error = await heraldError {
                _ = try await Herald.connect(
                    socketPath: daemon.socketPath,
                    options: Herald.Options(will: Herald.Will(name: "presence.me", userInfo: [:]))
                )
            }
            #expect(error?.code == .refused)
            #expect(error?.wireCode == 22, "TOO_MANY_WILLS")
        }
    }

    @Test func refusedPostsNobodyAwaitedAreCountedAndLoggedAtMostOnceASecond() async throws {
        try await withDaemon(["--max-retained", "1"]) { daemon in
            let lines = Mutex<[String]>([])
            let logger = Herald.Logger(level: .warning) { _, message in lines.withLock { $0.append(message) } }
            let herald = try await Herald.connect(
                socketPath: daemon.socketPath,
                options: Herald.Options(logger: logger, reconnects: false)
            )
            for index in 0..<50 {
                try await herald.post("r.\(index)", payload: Array("x".utf8), retain: true)
            }
            try await herald.flush()
            #expect(herald.refusedPosts == 49)
            let logged = lines.withLock { $0 }
            #expect((1...2).contains(logged.count), "\(logged)")
            #expect(logged.first?.contains("TOO_MANY_RETAINED") == true)
            #expect(herald.isConnected)
        }
    }

    @Test func subscribersSeeTheOriginAndTheRetainFlagAndThePayloadByteForByte() async throws {
        try await withDaemon { daemon in
            let herald = try await connect(daemon, reconnects: false)
            let stream = try await herald.notifications(matching: "o.*")
            let origin = HeraldNotification.Origin(host: "hostb", daemon: "heraldd", sequence: 99)
            let payload: [UInt8] = Array("not json [".utf8) + [0, 0xFF]
            try await herald.post("o.retained", payload: payload, retain: true, origin: origin)
            try await herald.post("o.plain", payload: Array("[1,2]".utf8))
            let received = await collect(2, from: stream)
            #expect(received.count == 2)
            #expect(received.first?.origin == origin)
            #expect(received.first?.updatesRetainedValue == true)
            #expect(received.first?.payload == payload)
            #expect(received.last?.origin == nil)
            #expect(received.last?.updatesRetainedValue == false)
            let value = try await herald.retainedValue(of: "o.retained")
            #expect(value?.origin == origin && value?.isRetained == true && value?.payload == payload)
        }
    }

    @Test func aStreamExcludingOwnPostsGetsOnlyOtherClientsPosts() async throws {
        try await withDaemon { daemon in
            let bridge = try await connect(daemon, reconnects: false)
            let other = try await connect(daemon, reconnects: false)
            let stream = try await bridge.notifications(matching: ["n.*"], excludingOwnPosts: true)
            try await bridge.post("n.mine")
            try await other.post("n.theirs")
            try await bridge.flush()
            // A marker after both: had its own post come back, it would be among the first two.
            try await other.post("n.marker")
            let received = await collect(2, from: stream)
            #expect(received.map(\.name) == ["n.theirs", "n.marker"])
        }
    }

    /// A version 1 daemon: a refusal still ends the connection, as it did, and origins are not sent.
    @Test func againstAVersion1DaemonARefusalEndsTheConnectionAsBefore() async throws {
        try await withDaemon(["--max-protocol-version", "1", "--max-retained", "1"]) { daemon in
            let herald = try await connect(daemon, reconnects: false)
            let stream = try await herald.notifications(matching: "v.*")
            let origin = HeraldNotification.Origin(host: "hostb")
            try await herald.post("v.a", payload: Array("1".utf8), retain: true, origin: origin)
            let first = await collect(1, from: stream)
            #expect(first.first?.origin == nil && first.first?.updatesRetainedValue == false)
            try await herald.post("v.b", payload: Array("2".utf8), retain: true)
            #expect(try await eventually { herald.disconnectReason?.wireCode == 18 })
            #expect(herald.disconnectReason?.code == .daemonError)
            #expect(await ends(stream))
            #expect(herald.refusedPosts == 0)
        }
    }
}
