import HeraldWire
import Testing

struct FrameDecoderTests {
    private func header(length: UInt32, type: UInt8, flags: UInt8 = 0) -> [UInt8] {
        withUnsafeBytes(of: length.littleEndian, Array.init) + [type, flags]
    }

    @Test func decodesSeveralFramesArrivingInOneRead() throws {
        let frames: [Frame] = [
            .ping(.init(request: 1)),
            .post(.init(name: "a.b", payload: [1, 2, 3])),
            .subscribe(.init(subscription: 2, pattern: try Pattern("a.*"))),
        ]
        var decoder = FrameDecoder(role: .daemon)
        decoder.append(contentsOf: frames.flatMap { $0.encoded() })
        var decoded: [Frame] = []
        while let frame = try decoder.next() { decoded.append(frame) }
        #expect(decoded == frames)
    }

    @Test func waitsForTheRestOfATruncatedFrame() throws {
        let bytes = Frame.ping(.init(request: 5)).encoded()
        var decoder = FrameDecoder(role: .daemon)
        decoder.append(contentsOf: bytes.dropLast())
        #expect(try decoder.next() == nil)
        decoder.append(contentsOf: bytes.suffix(1))
        #expect(try decoder.next() == .ping(.init(request: 5)))
    }

    @Test func rejectsAnOversizedLengthPrefixBeforeTheBodyArrives() {
        var decoder = FrameDecoder(role: .daemon, maxPayload: 100)
        decoder.append(contentsOf: header(length: 100_000, type: 0x02))
        #expect(throws: WireError(.frameTooLarge, "frame length 100000 is over the limit of 1124 bytes")) {
            try decoder.next()
        }
        // The decoder stays failed.
        #expect(throws: WireError.self) { try decoder.next() }
    }

    @Test func rejectsALengthUnderTwo() {
        var decoder = FrameDecoder(role: .daemon)
        decoder.append(contentsOf: header(length: 1, type: 0x02).prefix(5))
        #expect(throws: WireError(.malformedFrame, "frame length 1 is under the minimum of 2")) {
            try decoder.next()
        }
    }

    @Test(arguments: [UInt8(0x00), 0x0D, 0x7F, 0x81, 0x82, 0x88, 0xFF])
    func rejectsFrameTypesTheDaemonDoesNotAccept(type: UInt8) {
        #expect(throws: WireError.self) {
            _ = try Frame.decode(header(length: 2, type: type), role: .daemon)
        }
        do {
            _ = try Frame.decode(header(length: 2, type: type), role: .daemon)
        } catch {
            #expect(error.code == .unknownFrameType)
        }
    }

    @Test func rejectsAClientFrameArrivingAtAClient() {
        #expect(throws: WireError.self) {
            _ = try Frame.decode(Frame.ping(.init(request: 1)).encoded(), role: .client)
        }
    }

    @Test func rejectsABodyTooShortForItsFields() {
        // A PING with two bytes of its four-byte request.
        let bytes = header(length: 4, type: 0x06) + [1, 0]
        #expect(throws: WireError(.malformedFrame, "PING body ends inside its request field (2 bytes)")) {
            try Frame.decode(bytes, role: .daemon)
        }
    }

    @Test func rejectsBytesLeftAfterTheLastField() {
        let bytes = header(length: 7, type: 0x06) + [1, 0, 0, 0, 9]
        #expect(throws: WireError(.malformedFrame, "PING body has 1 bytes after its last field", request: 1)) {
            try Frame.decode(bytes, role: .daemon)
        }
    }

    @Test func rejectsUndefinedFlags() {
        let bytes = header(length: 6, type: 0x06, flags: 0x01) + [1, 0, 0, 0]
        #expect(throws: WireError(.invalidFlags, "PING has undefined flag bits set (0x1)", request: 1)) {
            try Frame.decode(bytes, role: .daemon)
        }
    }

    @Test func rejectsAnOversizedPayloadNamingTheRequest() {
        let frame = Frame.post(.init(request: 3, name: "a", payload: [UInt8](repeating: 0, count: 11)))
        #expect(throws: WireError(.payloadTooLarge, "payload of 11 bytes is over the limit of 10", request: 3)) {
            try Frame.decode(frame.encoded(), role: .daemon, maxPayload: 10)
        }
    }

    @Test func rejectsAPostToAnInvalidName() {
        // Encoded by hand: the encoder is never given an invalid name.
        let body: [UInt8] = [5, 0, 0, 0, 4] + Array("a..b".utf8)
        #expect(throws: WireError(.invalidName, "invalid name \"a..b\": empty segment at byte 2", request: 5)) {
            try Frame.decode(header(length: UInt32(2 + body.count), type: 0x02) + body, role: .daemon)
        }
    }

    @Test func rejectsAPatternWithDoubleStarInTheMiddle() {
        let body: [UInt8] = [1, 0, 0, 0, 6] + Array("a.**.b".utf8)
        #expect(
            throws: WireError(
                .invalidPattern,
                "invalid pattern \"a.**.b\": '**' is allowed only as the last segment",
                request: 1
            )
        ) {
            try Frame.decode(header(length: UInt32(2 + body.count), type: 0x03) + body, role: .daemon)
        }
    }

    @Test func rejectsASubscriptionNumberedZero() {
        let body: [UInt8] = [0, 0, 0, 0, 1, UInt8(ascii: "a")]
        #expect(throws: WireError(.invalidRequest, "SUBSCRIBE subscription must not be 0")) {
            try Frame.decode(header(length: UInt32(2 + body.count), type: 0x03) + body, role: .daemon)
        }
    }

    @Test func rejectsTheUndefinedOverflowPolicy() {
        let body: [UInt8] = [1, 0, 0, 0, 1, UInt8(ascii: "a")]
        #expect(throws: WireError(.invalidFlags, "SUBSCRIBE overflow policy 3 is not defined", request: 1)) {
            try Frame.decode(header(length: UInt32(2 + body.count), type: 0x03, flags: 3) + body, role: .daemon)
        }
    }

    @Test func rejectsAWillDelayOverAnHour() {
        let frame = Frame.will(.init(request: 1, delayMilliseconds: 3_600_001, name: "a", payload: []))
        #expect(throws: WireError(.malformedFrame, "WILL delay 3600001 ms is over the limit of 3600000", request: 1)) {
            try Frame.decode(frame.encoded(), role: .daemon)
        }
    }

    @Test func acceptsAnEmptyWillNameAsAWithdrawal() throws {
        let frame = Frame.will(.init(request: 1, delayMilliseconds: 0, name: "", payload: []))
        #expect(try Frame.decode(frame.encoded(), role: .daemon) == frame)
    }

    @Test func rejectsAHelloWithVersionsTheWrongWayRound() {
        let body: [UInt8] = [2, 0, 1, 0, 0]
        #expect(throws: WireError(.malformedFrame, "HELLO minVersion 2 is above maxVersion 1")) {
            try Frame.decode(header(length: UInt32(2 + body.count), type: 0x01) + body, role: .daemon)
        }
    }

    @Test func cutsAnOverlongErrorReasonAtACharacterBoundary() throws {
        let reason = String(repeating: "é", count: 600)  // 1200 bytes
        let frame = Frame.error(WireError(.malformedFrame, reason))
        let decoded = try Frame.decode(frame.encoded(), role: .client)
        guard case .error(let error) = decoded else {
            Issue.record("decoded \(decoded)")
            return
        }
        #expect(error.reason == String(repeating: "é", count: 512))
    }

    @Test func keepsItsBufferWithinOneFrameAfterManyFrames() throws {
        var decoder = FrameDecoder(role: .daemon)
        let frame = Frame.post(.init(name: "a.b", payload: [UInt8](repeating: 7, count: 1000)))
        let bytes = frame.encoded()
        for _ in 0..<1000 {
            decoder.append(contentsOf: bytes)
            #expect(try decoder.next() == frame)
        }
        #expect(decoder.bufferedByteCount == 0)
    }
}

/// `PLUGIN`'s own checks (wire.md, `PLUGIN`).
struct PluginFrameDecodingTests {
    private func plugin(request: UInt32, action: UInt8, name: String) -> [UInt8] {
        var body: [UInt8] = withUnsafeBytes(of: request.littleEndian) { Array($0) } + [action, UInt8(name.utf8.count)]
        body += Array(name.utf8)
        let length = UInt32(2 + body.count)
        return withUnsafeBytes(of: length.littleEndian) { Array($0) } + [0x0C, 0x00] + body
    }

    @Test(arguments: [
        (UInt8(0), "session", "PLUGIN action 0 is not 1 to 4"),
        (5, "session", "PLUGIN action 5 is not 1 to 4"),
        (1, "", "PLUGIN START needs a plugin's name"),
        (4, "session", "PLUGIN RELOAD takes no name"),
    ])
    func refusesABadActionOrANameThatDoesNotFitIt(action: UInt8, name: String, reason: String) {
        let error = #expect(throws: WireError.self) {
            _ = try Frame.decode(plugin(request: 3, action: action, name: name), role: .daemon)
        }
        #expect(error?.code == .malformedFrame)
        #expect(error?.request == 3)
        #expect(error?.reason == reason)
    }

    @Test func aPluginFrameIsForTheDaemonOnly() {
        let error = #expect(throws: WireError.self) {
            _ = try Frame.decode(plugin(request: 3, action: 1, name: "session"), role: .client)
        }
        #expect(error?.code == .unknownFrameType)
    }
}

/// `NAMES` and `NAMES_REPORT` with version 2's `COUNTS` (wire.md, `NAMES`).
struct NamesCountsDecodingTests {
    @Test func aNamesReportWithCountsKeepsMoreAndRoundTripsInVersion2() throws {
        let frame = Frame.namesReport(.init(request: 7, names: ["a", "b.c"], more: true, counts: [3, 0]))
        #expect(try Frame.decode(frame.encoded(), role: .client, version: 2) == frame)
        let plain = Frame.namesReport(.init(request: 7, names: ["a", "b.c"], more: true))
        #expect(try Frame.decode(plain.encoded(), role: .client, version: 2) == plain)
    }

    @Test func rejectsANamesReportWithCountsWhoseLastNameHasNoWholeCount() {
        // request 1, then "a" with a 4-byte count, then "b" with only 3 bytes of one.
        let body: [UInt8] = [1, 0, 0, 0, 1, 0x61, 2, 0, 0, 0, 1, 0x62, 5, 0, 0]
        let length = UInt32(2 + body.count)
        let bytes = withUnsafeBytes(of: length.littleEndian, Array.init) + [0x87, FrameFlags.namesReportCounts] + body
        let error = #expect(throws: WireError.self) { _ = try Frame.decode(bytes, role: .client, version: 2) }
        #expect(error?.code == .malformedFrame)
    }

    @Test func namesCountsIsInvalidFlagsInVersion1AndKnownInVersion2() throws {
        let bytes = Frame.names(.init(request: 3, counts: true)).encoded()
        #expect(bytes[5] == FrameFlags.counts)
        #expect(try Frame.decode(bytes, role: .daemon, version: 2) == .names(.init(request: 3, counts: true)))
        let error = #expect(throws: WireError.self) { _ = try Frame.decode(bytes, role: .daemon, version: 1) }
        #expect(error?.code == .invalidFlags)
        #expect(error?.request == 3)
    }
}
