import HeraldWire
import Testing

/// The hex vectors of Protocols/wire.md, read from the spec itself so the document and the codec
/// cannot drift apart.
struct WireVectorTests {
    static let expected: [String: Frame] = [
        "hello": .hello(.init(minVersion: 1, maxVersion: 1, client: "herald")),
        "post": .post(.init(request: 0, name: "session.willResignActive", payload: Array(#"{"user":"alice"}"#.utf8))),
        "post-retain-acked": .post(
            .init(request: 7, name: "session.state", payload: Array(#"{"state":"away"}"#.utf8), retain: true)
        ),
        "post-retain-clear": .post(.init(request: 8, name: "session.state", payload: [], retain: true)),
        "subscribe": .subscribe(.init(subscription: 1, pattern: try! Pattern("session.*"))),
        "unsubscribe": .unsubscribe(.init(subscription: 1)),
        "get": .get(.init(request: 9, name: "session.state")),
        "ping": .ping(.init(request: 10)),
        "status": .status(.init(request: 11)),
        "bye": .bye,
        "subscribe-coalesce": .subscribe(
            .init(subscription: 2, pattern: try! Pattern("session.state"), overflow: .coalesce)
        ),
        "will": .will(
            .init(
                request: 12,
                delayMilliseconds: 5000,
                name: "chat.presence.alice",
                payload: Array(#"{"state":"gone"}"#.utf8),
                retain: true
            )
        ),
        "will-withdraw": .will(.init(request: 15, delayMilliseconds: 0, name: "", payload: [])),
        "monitor": .monitor(.init(request: 13)),
        "names": .names(.init(request: 14)),
        "plugin-restart": .plugin(.init(request: 15, action: .restart, name: "session")),
        "plugin-reload": .plugin(.init(request: 16, action: .reload, name: "")),
        "names-report": .namesReport(.init(request: 14, names: ["session.didBecomeActive", "session.state"])),
        "welcome": .welcome(
            .init(version: 1, maxSubscriptions: 1024, maxPayload: 65536, daemonPID: 4242, server: "heraldd 0.1.0")
        ),
        "notify": .notify(
            .init(
                sequence: 42,
                time: 1_795_000_000_123_456_789,
                pid: 1234,
                uid: 1000,
                gid: 1000,
                name: "session.willResignActive",
                payload: Array(#"{"user":"alice"}"#.utf8)
            )
        ),
        "notify-retained": .notify(
            .init(
                sequence: 7,
                time: 1_795_000_000_000_000_000,
                pid: 99,
                uid: 1000,
                gid: 100,
                subscription: 3,
                retained: true,
                name: "session.state",
                payload: Array(#"{"state":"away"}"#.utf8)
            )
        ),
        "ack": .ack(.init(request: 1, sequence: 41)),
        "dropped": .dropped(.init(count: 3, firstSequence: 100, lastSequence: 104)),
        "error": .error(WireError(.invalidName, #"invalid name "a..b": empty segment at byte 2"#)),
        "error-answering": .error(
            WireError(.invalidFlags, "PING has undefined flag bits set (0x1)", request: 10)
        ),
        "status-report": .statusReport(
            .init(
                request: 11,
                pid: 4242,
                startTime: 1_795_000_000_000_000_000,
                connections: 3,
                subscriptions: 5,
                retained: 2,
                posted: 100,
                delivered: 250,
                dropped: 4
            )
        ),
    ]

    /// The vectors of wire.md's "Version 2 vectors": decoded by a decoder of version 2.
    static let version2: [String: Frame] = [
        "hello-v2": .hello(.init(minVersion: 1, maxVersion: 2, client: "herald")),
        "post-quiet": .post(.init(request: 17, name: "sensor.temp", payload: Array("21.5".utf8), quiet: true)),
        "post-origin": .post(
            .init(
                request: 0,
                name: "sensor.temp",
                payload: Array("[1,2]".utf8),
                retain: true,
                origin: .init(host: "hostb", daemon: "heraldd", sequence: 99)
            )
        ),
        "notify-retain": .notify(
            .init(
                sequence: 43,
                time: 1_795_000_000_123_456_789,
                pid: 1234,
                uid: 1000,
                gid: 1000,
                retain: true,
                name: "session.state",
                payload: Array(#"{"state":"away"}"#.utf8)
            )
        ),
        "notify-origin": .notify(
            .init(
                sequence: 44,
                time: 1_795_000_000_123_456_789,
                pid: 77,
                uid: 1000,
                gid: 1000,
                retain: true,
                name: "sensor.temp",
                origin: .init(host: "hostb", daemon: "heraldd", sequence: 99),
                payload: Array("[1,2]".utf8)
            )
        ),
        "subscribe-no-local": .subscribe(.init(subscription: 3, pattern: try! Pattern("**"), noLocal: true)),
        "names-counts": .names(.init(request: 18, counts: true)),
        "names-report-counts": .namesReport(
            .init(request: 18, names: ["sensor.temp", "session.state"], more: false, counts: [0, 2])
        ),
        "error-refusal": .error(
            WireError(
                .tooManyRetained,
                "10000 names already have a retained value, the limit is 10000",
                request: 17,
                isRefusal: true
            )
        ),
    ]

    static let vectors: [String: [UInt8]] = SpecFile.hexVectors()

    @Test(arguments: version2.keys.sorted())
    func version2VectorDecodesAndEncodes(name: String) throws {
        let bytes = try #require(Self.vectors[name], "wire.md has no vector named \(name)")
        let frame = try #require(Self.version2[name])
        let role: FrameDecoder.Role = frame.type.isClientFrame ? .daemon : .client
        #expect(try Frame.decode(bytes, role: role, version: 2) == frame)
        #expect(frame.encoded() == bytes)
        #expect(frame.encodedSize == bytes.count)
    }

    /// Version 1 has none of the new flag bits: a version 1 decoder refuses each new layout as `INVALID_FLAGS`.
    @Test(arguments: version2.keys.sorted().filter { $0 != "hello-v2" })
    func version2LayoutIsInvalidFlagsInVersion1(name: String) throws {
        let bytes = try #require(Self.vectors[name])
        let frame = try #require(Self.version2[name])
        let role: FrameDecoder.Role = frame.type.isClientFrame ? .daemon : .client
        do {
            let decoded = try Frame.decode(bytes, role: role, version: 1)
            Issue.record("version 1 decoded \(decoded)")
        } catch {
            #expect(error.code == .invalidFlags)
        }
    }

    @Test(arguments: expected.keys.sorted())
    func version1VectorIsTheSameInVersion2(name: String) throws {
        let bytes = try #require(Self.vectors[name])
        let frame = try #require(Self.expected[name])
        #expect(try Frame.decode(bytes, role: frame.type.isClientFrame ? .daemon : .client, version: 2) == frame)
    }

    @Test func specHasAVectorForEveryFrameTypeAndEveryVectorIsChecked() {
        #expect(Set(Self.vectors.keys) == Set(Self.expected.keys).union(Self.version2.keys))
        let covered = Set(Self.expected.values.map(\.type))
        #expect(covered == Set(FrameType.allCases))
    }

    @Test(arguments: expected.keys.sorted())
    func vectorDecodesToItsFrame(name: String) throws {
        let bytes = try #require(Self.vectors[name], "wire.md has no vector named \(name)")
        let expected = try #require(Self.expected[name])
        let role: FrameDecoder.Role = expected.type.isClientFrame ? .daemon : .client
        #expect(try Frame.decode(bytes, role: role) == expected)
    }

    @Test(arguments: expected.keys.sorted())
    func frameEncodesToItsVector(name: String) throws {
        let bytes = try #require(Self.vectors[name], "wire.md has no vector named \(name)")
        let frame = try #require(Self.expected[name])
        #expect(frame.encoded() == bytes)
        #expect(frame.encodedSize == bytes.count)
    }

    @Test(arguments: expected.keys.sorted())
    func vectorDecodesWhenFedOneByteAtATime(name: String) throws {
        let bytes = try #require(Self.vectors[name])
        let frame = try #require(Self.expected[name])
        var decoder = FrameDecoder(role: frame.type.isClientFrame ? .daemon : .client)
        var frames: [Frame] = []
        for byte in bytes {
            decoder.append(contentsOf: [byte])
            if let next = try decoder.next() { frames.append(next) }
        }
        #expect(frames == [frame])
        #expect(decoder.bufferedByteCount == 0)
    }
}
