import Foundation
import HeraldPosix
import HeraldTestSupport
import HeraldWire
import Testing

/// Issue 20: the sixteen places wire.md was silent, each checked against the real heraldd over raw sockets, so the
/// words and the daemon cannot drift apart again. Each test names the point it pins.
struct WireContractTests {
    // MARK: Raw frames

    /// `frame` encoded with its flags byte replaced.
    static func withFlags(_ frame: Frame, _ flags: UInt8) -> [UInt8] {
        var bytes = frame.encoded()
        bytes[5] = flags
        return bytes
    }

    /// A frame from raw parts: wire.md's header, then the body as given.
    static func frame(_ type: UInt8, flags: UInt8 = 0, _ body: [UInt8]) -> [UInt8] {
        u32(UInt32(body.count + 2)) + [type, flags] + body
    }

    static func u32(_ value: UInt32) -> [UInt8] {
        [UInt8(value & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value >> 16 & 0xFF), UInt8(value >> 24)]
    }

    static func str8(_ text: String) -> [UInt8] { [UInt8(text.utf8.count)] + Array(text.utf8) }

    // MARK: The points

    /// Point 1: `--max-name-bytes` lowers the 255-byte bound for names and patterns alike.
    @Test func point1_maxNameBytesLowersTheBoundForNamesAndPatterns() async throws {
        let daemon = try await TestDaemon.start(arguments: ["--max-name-bytes", "8"])
        let poster = try WireClient.ready(socketPath: daemon.socketPath)
        try poster.post("abcd.efg", request: 4)
        try poster.send(.post(.init(request: 5, name: "abcd.efgh", payload: [])))
        #expect(try poster.finalError() == Answer(.invalidName, 5))
        let subscriber = try WireClient.ready(socketPath: daemon.socketPath)
        try subscriber.subscribe(1, "a.b.c.de")
        try subscriber.send(.subscribe(.init(subscription: 6, pattern: try Pattern("a.b.c.def"))))
        #expect(try subscriber.finalError() == Answer(.invalidPattern, 6))
    }

    /// Point 2: a frame that fails the first stage of checks gets that error even before HELLO; a valid frame other
    /// than HELLO gets HELLO_REQUIRED, naming its request.
    @Test func point2_theFrameAloneIsCheckedBeforeTheConnectionsState() async throws {
        let daemon = try await TestDaemon.start()
        let cases: [([UInt8], Answer)] = [
            (Self.frame(0x7F, Self.u32(4)), Answer(.unknownFrameType, 0)),
            (Self.withFlags(.ping(.init(request: 4)), 1), Answer(.invalidFlags, 4)),
            (Frame.ping(.init(request: 4)).encoded(), Answer(.helloRequired, 4)),
        ]
        for (bytes, answer) in cases {
            let client = try WireClient(socketPath: daemon.socketPath)
            try client.sendBytes(bytes)
            #expect(try client.finalError() == answer)
        }
    }

    /// Point 3 (and 5, and 16's refusal): every ERROR about a frame carries that frame's request or subscription when
    /// its body holds it, whatever the code; 0 otherwise. One case per row of wire.md's table that a frame can reach.
    @Test func point3_everyErrorFollowsTheRequestRule() async throws {
        let daemon = try await TestDaemon.start(arguments: ["--max-payload", "1024"])
        let cases: [(setup: [Frame], bytes: [UInt8], answer: Answer)] = [
            ([], Self.withFlags(.ping(.init(request: 10)), 1), Answer(.invalidFlags, 10)),
            ([], Self.frame(0x03, flags: 4, Self.u32(11) + Self.str8("a")), Answer(.invalidFlags, 11)),
            ([], Self.frame(0x03, flags: 3, Self.u32(12) + Self.str8("a")), Answer(.invalidFlags, 12)),
            ([], Self.frame(0x06, Self.u32(13) + [0]), Answer(.malformedFrame, 13)),
            ([], Self.frame(0x06, [13, 0, 0]), Answer(.malformedFrame, 0)),
            ([], Self.frame(0x09, Self.u32(14) + Self.u32(3_600_001) + Self.str8("a")), Answer(.malformedFrame, 14)),
            ([], Self.frame(0x02, Self.u32(15) + Self.str8("a..b")), Answer(.invalidName, 15)),
            ([], Self.frame(0x05, Self.u32(16) + Self.str8("a.")), Answer(.invalidName, 16)),
            ([], Self.frame(0x03, Self.u32(17) + Self.str8("a.**.b")), Answer(.invalidPattern, 17)),
            // Point 5: a pattern that is not UTF-8 is INVALID_PATTERN.
            ([], Self.frame(0x03, Self.u32(18) + [2, 0x61, 0xFF]), Answer(.invalidPattern, 18)),
            (
                [.subscribe(.init(subscription: 1, pattern: try Pattern("x")))],
                Frame.subscribe(.init(subscription: 1, pattern: try Pattern("y"))).encoded(),
                Answer(.duplicateSubscription, 1)
            ),
            ([], Frame.unsubscribe(.init(subscription: 19)).encoded(), Answer(.unknownSubscription, 19)),
            ([], Frame.post(.init(request: 20, name: "herald.x", payload: [])).encoded(), Answer(.reservedName, 20)),
            (
                [.monitor(.init(request: 2))],
                Frame.post(.init(request: 21, name: "m", payload: [])).encoded(),
                Answer(.permissionDenied, 21)
            ),
            ([], Frame.hello(.init(client: "again")).encoded(), Answer(.unexpectedHello, 0)),
            ([], Self.frame(0x7F, Self.u32(1)), Answer(.unknownFrameType, 0)),
            ([], Self.frame(0x05, Self.u32(0) + Self.str8("a")), Answer(.invalidRequest, 0)),
            // Point 16: a withdrawal with a payload.
            ([], Self.frame(0x09, Self.u32(22) + Self.u32(0) + [0, 0x78]), Answer(.malformedFrame, 22)),
            (
                [],
                Frame.post(.init(request: 23, name: "big", payload: [UInt8](repeating: 1, count: 1025))).encoded(),
                Answer(.payloadTooLarge, 23)
            ),
            ([], [0xFF, 0xFF, 0, 0, 0x06, 0], Answer(.frameTooLarge, 0)),
        ]
        for (index, item) in cases.enumerated() {
            let client = try WireClient.ready(socketPath: daemon.socketPath)
            for frame in item.setup {
                try client.send(frame)
                guard case .ack? = try client.receive() else { throw TestFailure("case \(index): setup not acked") }
            }
            try client.sendBytes(item.bytes)
            #expect(try client.finalError() == item.answer, "case \(index)")
        }
    }

    /// Point 4: a connection refused on accept gets an ERROR, request 0, in place of WELCOME, then end of file.
    @Test func point4_aConnectionRefusedOnAcceptGetsAnErrorInPlaceOfWelcome() async throws {
        let daemon = try await TestDaemon.start(arguments: ["--max-connections", "1"])
        let held = try WireClient.ready(socketPath: daemon.socketPath)
        let refused = try WireClient(socketPath: daemon.socketPath)
        try? refused.send(.hello(.init(client: "late")))
        let error = try refused.finalError()
        #expect(error == Answer(.tooManyConnections, 0))
        #expect(error.before.isEmpty, "frames before the ERROR: \(error.before)")
        try held.post("still.served")
    }

    /// Point 6: HELLO with versions 0 to 0 is UNSUPPORTED_VERSION, and what was pipelined after it is not processed.
    @Test func point6_helloWithVersionsZeroToZeroIsUnsupported() async throws {
        let daemon = try await TestDaemon.start()
        let client = try WireClient(socketPath: daemon.socketPath)
        try client.sendBytes(
            Frame.hello(.init(minVersion: 0, maxVersion: 0, client: "zero")).encoded()
                + Frame.ping(.init(request: 5)).encoded()
        )
        let error = try client.finalError()
        #expect(error == Answer(.unsupportedVersion, 0))
        #expect(error.before.isEmpty, "frames before the ERROR: \(error.before)")
    }

    /// Point 7: frames sent right after HELLO, before WELCOME arrives, are served in order after WELCOME.
    @Test func point7_framesPipelinedAfterHelloAreServedInOrder() async throws {
        let daemon = try await TestDaemon.start()
        let client = try WireClient(socketPath: daemon.socketPath)
        try client.sendBytes(
            Frame.hello(.init(client: "pipelined")).encoded()
                + Frame.subscribe(.init(subscription: 1, pattern: try Pattern("p.*"))).encoded()
                + Frame.post(.init(request: 2, name: "p.x", payload: [])).encoded()
                + Frame.ping(.init(request: 3)).encoded()
        )
        var frames: [Frame] = []
        for _ in 0..<5 { frames.append(try #require(try client.receive())) }
        #expect(frames.map(\.type) == [.welcome, .ack, .notify, .ack, .ack])
        #expect(frames[1] == .ack(.init(request: 1, sequence: 0)))
        #expect(frames[3] == .ack(.init(request: 2, sequence: 1)))
        #expect(frames[4] == .ack(.init(request: 3, sequence: 1)))
    }

    /// Point 8: the live NOTIFY of a POST with RETAIN has RETAINED clear and subscription 0.
    @Test func point8_theLiveNotifyOfARetainedPostIsPlainlyLive() async throws {
        let daemon = try await TestDaemon.start()
        let subscriber = try WireClient.ready(socketPath: daemon.socketPath)
        try subscriber.subscribe(3, "r.*")
        let publisher = try WireClient.ready(socketPath: daemon.socketPath)
        let sequence = try publisher.post("r.state", "on", retain: true)
        guard case .notify(let notify)? = try subscriber.receive() else { throw TestFailure("no NOTIFY") }
        #expect(notify.sequence == sequence && notify.name == "r.state")
        #expect(!notify.retained)
        #expect(notify.subscription == 0)
        // The replay of the same value, for a new subscription, is the one with RETAINED set.
        let replay = try subscriber.subscribe(4, "r.state")
        #expect(
            replay == [
                .notify(
                    {
                        var stored = notify
                        stored.retained = true
                        stored.subscription = 4
                        return stored
                    }()
                )
            ]
        )
    }

    /// Point 9: WILL and MONITOR are acknowledged with the last sequence number assigned, as PING is.
    @Test func point9_willAndMonitorAreAckedWithTheLastSequenceNumber() async throws {
        let daemon = try await TestDaemon.start()
        let client = try WireClient.ready(socketPath: daemon.socketPath)
        try client.post("s.a")
        let last = try client.post("s.b")
        try client.send(.will(.init(request: 7, delayMilliseconds: 0, name: "s.gone", payload: [])))
        #expect(try client.receive() == .ack(.init(request: 7, sequence: last)))
        try client.send(.monitor(.init(request: 8)))
        #expect(try client.receive() == .ack(.init(request: 8, sequence: last)))
        try client.send(.ping(.init(request: 9)))
        #expect(try client.receive() == .ack(.init(request: 9, sequence: last)))
    }

    /// Point 10: MONITOR is SUBSCRIBE `**` without the retained replay: its ACK comes first, live posts carry
    /// subscription 0, UNSUBSCRIBE ends it, the connection stays read-only, and it counts as a subscription.
    @Test func point10_monitorIsSubscribeEverythingWithoutTheReplay() async throws {
        let daemon = try await TestDaemon.start(arguments: ["--max-subscriptions", "1"])
        let publisher = try WireClient.ready(socketPath: daemon.socketPath)
        let stored = try publisher.post("m.state", "kept", retain: true)
        let monitor = try WireClient.ready(socketPath: daemon.socketPath)
        try monitor.send(.monitor(.init(request: 7)))
        #expect(try monitor.receive() == .ack(.init(request: 7, sequence: stored)))
        let live = try publisher.post("any.thing")
        guard case .notify(let notify)? = try monitor.receive() else {
            Issue.record("the monitor got no live post")
            return
        }
        #expect(notify.sequence == live && notify.subscription == 0 && !notify.retained)
        try monitor.send(.unsubscribe(.init(subscription: 7)))
        // UNSUBSCRIBE has no ACK: a PING answered after it shows it was processed, before the next post is made on
        // the other connection.
        try monitor.send(.ping(.init(request: 70)))
        #expect(try monitor.receive() == .ack(.init(request: 70, sequence: live)))
        let unseen = try publisher.post("any.thing")
        try monitor.send(.ping(.init(request: 8)))
        #expect(try monitor.receive() == .ack(.init(request: 8, sequence: unseen)))
        try monitor.send(.post(.init(request: 9, name: "m.x", payload: [])))
        #expect(try monitor.finalError() == Answer(.permissionDenied, 9))
        // It takes a subscription's place: past --max-subscriptions it is refused as SUBSCRIBE would be.
        let full = try WireClient.ready(socketPath: daemon.socketPath)
        try full.subscribe(1, "a")
        try full.send(.monitor(.init(request: 2)))
        #expect(try full.finalError() == Answer(.tooManySubscriptions, 2))
    }

    /// Point 11: NAMES lists each name once, sorted by UTF-8 bytes, in frames of at most
    /// min(60000, maxPayload + 960) bytes of names, each frame as full as the next name allows.
    @Test func point11_namesAreSortedBytewiseListedOnceAndSplitWhereTheSpecSays() async throws {
        let daemon = try await TestDaemon.start(arguments: ["--max-payload", "0"])
        let long = (0..<12).map { "long.\($0)." + String(repeating: "x", count: 90 + $0) }
        // The two orders disagree here: String's puts the ring first, the bytes (CC 88 < CC 8A) the diaeresis.
        let unicode = ["u.o\u{308}", "u.o\u{30A}"]
        let one = try WireClient.ready(socketPath: daemon.socketPath)
        let two = try WireClient.ready(socketPath: daemon.socketPath)
        for (index, name) in (long + unicode).enumerated() {
            try one.subscribe(UInt32(index + 1), name)
            try two.subscribe(UInt32(index + 1), name)
        }
        try one.send(.names(.init(request: 5)))
        var reports: [Frame.NamesReport] = []
        while true {
            guard case .namesReport(let report)? = try one.receive() else { throw TestFailure("not a NAMES_REPORT") }
            reports.append(report)
            if !report.more { break }
        }
        let expected = (long + unicode).sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        #expect(expected != (long + unicode).sorted())
        #expect(reports.flatMap(\.names) == expected)
        #expect(reports.allSatisfy { $0.request == 5 })
        let bound = min(60000, 0 + 960)
        for (index, report) in reports.enumerated() {
            let size = report.names.reduce(0) { $0 + 1 + $1.utf8.count }
            #expect(size <= bound)
            #expect(report.more == (index < reports.count - 1))
            if index < reports.count - 1 {
                // As full as the next name allows.
                #expect(size + 1 + reports[index + 1].names[0].utf8.count > bound)
            }
        }
        #expect(reports.count > 1)
    }

    /// Point 12: under DISCONNECT no DROPPED notice precedes SLOW_CONSUMER, which has request 0 and is the last frame.
    @Test func point12_aSlowConsumerIsDisconnectedWithoutADroppedNotice() async throws {
        let daemon = try await TestDaemon.start(arguments: ["--queue-bytes", "4096"])
        let path = daemon.socketPath
        let (before, error) = try await blocking { () throws -> ([Frame], WireError) in
            let slow = try WireClient.ready(socketPath: path)
            try slow.send(.subscribe(.init(subscription: 1, pattern: try Pattern("flood"), overflow: .disconnect)))
            guard case .ack? = try slow.receive() else { throw TestFailure("no ACK") }
            // Far more than the socket buffers and the queue hold, without reading.
            try WireClient.ready(socketPath: path).blast(2000, to: "flood", payloadSize: 1000)
            let answer = try slow.finalError()
            return (answer.before, answer.error)
        }
        #expect(error.code == .slowConsumer)
        #expect(error.request == 0)
        #expect(!before.contains { $0.type == .dropped }, "a DROPPED notice came before SLOW_CONSUMER")
        #expect(before.allSatisfy { $0.type == .notify })
    }

    /// Point 13: names under `herald.` may be subscribed to, read and listed; only POST and WILL are refused.
    @Test func point13_reservedNamesMayBeSubscribedAndReadButNotPosted() async throws {
        let daemon = try await TestDaemon.start()
        let client = try WireClient.ready(socketPath: daemon.socketPath)
        try client.subscribe(1, "herald.dropped")
        try client.subscribe(2, "herald.**")
        try client.send(.get(.init(request: 3, name: "herald.dropped")))
        #expect(try client.receive() == .ack(.init(request: 3, sequence: 0)))
        try client.send(.names(.init(request: 4)))
        #expect(try client.receive() == .namesReport(.init(request: 4, names: ["herald.dropped"])))
        try client.send(.post(.init(request: 5, name: "herald.dropped", payload: [])))
        #expect(try client.finalError() == Answer(.reservedName, 5))
        let willing = try WireClient.ready(socketPath: daemon.socketPath)
        try willing.send(.will(.init(request: 6, delayMilliseconds: 0, name: "herald.gone", payload: [])))
        #expect(try willing.finalError() == Answer(.reservedName, 6))
    }

    /// Point 14: clearing a retained value frees its --max-retained slot at once; a clear is never refused.
    @Test func point14_clearingARetainedValueFreesItsSlot() async throws {
        let daemon = try await TestDaemon.start(arguments: ["--max-retained", "1"])
        let client = try WireClient.ready(socketPath: daemon.socketPath)
        try client.post("k.a", "1", retain: true, request: 1)
        try client.post("k.never", "", retain: true, request: 2)
        try client.post("k.a", "", retain: true, request: 3)
        try client.post("k.b", "2", retain: true, request: 4)
        let refused = try WireClient.ready(socketPath: daemon.socketPath)
        try refused.send(.post(.init(request: 5, name: "k.c", payload: [1], retain: true)))
        #expect(try refused.finalError() == Answer(.tooManyRetained, 5))
    }

    /// Point 15: on SIGTERM a client reads everything queued for it, then ERROR SHUTTING_DOWN (request 0), then end of
    /// file.
    @Test func point15_shutdownWritesWhatIsQueuedThenShuttingDown() async throws {
        let daemon = try await TestDaemon.start()
        let path = daemon.socketPath
        let total = 3000
        let (subscriber, last) = try await blocking { () throws -> (WireClient, UInt64) in
            let subscriber = try WireClient.ready(socketPath: path)
            try subscriber.subscribe(1, "queued")
            let publisher = try WireClient.ready(socketPath: path)
            // ~3 MB: more than the socket buffers take, less than the 4 MiB queue, so the rest waits in the daemon.
            try publisher.blast(total - 1, to: "queued", payloadSize: 1000)
            return (subscriber, try publisher.post("queued"))
        }
        daemon.process.signal(SIGTERM)
        let answer = try await blocking { try subscriber.finalError() }
        #expect(answer.error.code == .shuttingDown)
        #expect(answer.error.request == 0)
        let sequences = answer.before.compactMap { if case .notify(let notify) = $0 { notify.sequence } else { nil } }
        #expect(sequences.count == total)
        #expect(sequences.last == last)
        #expect(answer.before.count == total, "other frames: \(answer.before.filter { $0.type != .notify })")
        #expect(try await daemon.process.waitForExit() == 0)
    }

    /// Point 16: a WILL with an empty name and payload withdraws the will, which is then not posted.
    @Test func point16_aWithdrawnWillIsNotPosted() async throws {
        let daemon = try await TestDaemon.start()
        let observer = try WireClient.ready(socketPath: daemon.socketPath)
        try observer.subscribe(1, "w.*")
        // The control: a will that is not withdrawn is posted when its connection ends.
        var kept: WireClient? = try WireClient.ready(socketPath: daemon.socketPath)
        try kept!.send(.will(.init(request: 1, delayMilliseconds: 0, name: "w.kept", payload: [])))
        guard case .ack? = try kept!.receive() else { throw TestFailure("no ACK for the will") }
        var withdrawn: WireClient? = try WireClient.ready(socketPath: daemon.socketPath)
        try withdrawn!.send(.will(.init(request: 1, delayMilliseconds: 0, name: "w.withdrawn", payload: [])))
        try withdrawn!.send(.will(.init(request: 2, delayMilliseconds: 0, name: "", payload: [])))
        #expect(try withdrawn!.receive() == .ack(.init(request: 1, sequence: 0)))
        #expect(try withdrawn!.receive() == .ack(.init(request: 2, sequence: 0)))
        // Closed without BYE, as a crash would.
        withdrawn = nil
        kept = nil
        guard case .notify(let notify)? = try observer.receive() else {
            throw TestFailure("the kept will was not posted")
        }
        #expect(notify.name == "w.kept")
        // Both connections are gone once STATUS counts two (the observer and the asker); a will of delay 0 is posted
        // in the turn its connection closes, so by then the withdrawn one would have been too.
        let asker = try WireClient.ready(socketPath: daemon.socketPath)
        #expect(
            try await eventually {
                try asker.send(.status(.init(request: 1)))
                guard case .statusReport(let report)? = try asker.receive() else { return false }
                return report.connections == 2
            }
        )
        try observer.send(.ping(.init(request: 3)))
        #expect(try observer.receive() == .ack(.init(request: 3, sequence: notify.sequence)))
    }

}

/// An ERROR's code and request, as the tests compare them, with the frames read before it.
struct Answer: Equatable, CustomStringConvertible {
    var code: WireError.Code
    var request: UInt32
    var before: [Frame] = []
    var error: WireError { WireError(code, "", request: request) }

    init(_ code: WireError.Code, _ request: UInt32) {
        self.code = code
        self.request = request
    }

    static func == (lhs: Answer, rhs: Answer) -> Bool { lhs.code == rhs.code && lhs.request == rhs.request }

    var description: String { "\(code) request \(request)" }
}

extension WireClient {
    /// Reads until the connection's final ERROR, checks that the connection ends after it, and returns it with the
    /// frames read before it.
    func finalError() throws -> Answer {
        var before: [Frame] = []
        while let frame = try receive() {
            guard case .error(let error) = frame else {
                before.append(frame)
                continue
            }
            // The end: end of file, or a reset when the daemon left bytes the client sent unread (wire.md, ERROR).
            do {
                guard try receive() == nil else { throw TestFailure("a frame after the final ERROR \(error)") }
            } catch let failure as SystemError where failure.errno == .connectionReset {}
            var answer = Answer(error.code, error.request)
            answer.before = before
            return answer
        }
        throw TestFailure("the connection ended without an ERROR after \(before.map(\.type))")
    }
}
