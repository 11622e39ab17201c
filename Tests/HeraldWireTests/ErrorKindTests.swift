import HeraldWire
import Testing

/// wire.md's "Refusals and fatal errors": every code's kind, and what a decoder does after each kind.
struct ErrorKindTests {
    static let refusals: Set<WireError.Code> = [
        .invalidName, .invalidPattern, .payloadTooLarge, .reservedName, .tooManySubscriptions, .duplicateSubscription,
        .unknownSubscription, .patternTooComplex, .tooManyRetained, .tooManyRetainedBytes, .tooManyWills,
        .tooManyNames, .permissionDenied, .unknownPlugin,
    ]

    @Test(arguments: WireError.Code.all)
    func everyCodeHasTheKindWireMdGivesIt(code: WireError.Code) {
        #expect(code.isRefusal == Self.refusals.contains(code), "\(code)")
        #expect(!code.description.hasPrefix("ERROR_"), "wire.md names every code")
    }

    @Test func anUnknownCodeIsFatal() {
        #expect(!WireError.Code(rawValue: 27).isRefusal)
    }

    /// A POST with an invalid name, then a PING: version 2 reads on after the refusal, version 1 does not.
    @Test(arguments: [UInt16(1), 2])
    func decoderGoesOnAfterARefusalOnlyInVersion2(version: UInt16) throws {
        var decoder = FrameDecoder(role: .daemon)
        decoder.version = version
        var bad = Frame.post(.init(request: 5, name: "a.b", payload: [])).encoded()
        bad[7 + 4 + 1 + 1] = UInt8(ascii: ".")  // "a..": an empty segment
        decoder.append(contentsOf: bad)
        decoder.append(contentsOf: Frame.ping(.init(request: 6)).encoded())
        do {
            _ = try decoder.next()
            Issue.record("the invalid name was accepted")
        } catch {
            #expect(error.code == .invalidName)
            #expect(error.request == 5)
        }
        if version == 1 {
            #expect(throws: WireError.self) { _ = try decoder.next() }
        } else {
            #expect(try decoder.next() == .ping(.init(request: 6)))
        }
    }

    /// A fatal error ends the stream in both versions.
    @Test(arguments: [UInt16(1), 2])
    func decoderStopsAfterAFatalErrorInBothVersions(version: UInt16) throws {
        var decoder = FrameDecoder(role: .daemon)
        decoder.version = version
        decoder.append(contentsOf: [6, 0, 0, 0, 0x06, 0x01, 1, 0, 0, 0] as [UInt8])  // PING with a flag: INVALID_FLAGS
        decoder.append(contentsOf: Frame.ping(.init(request: 6)).encoded())
        #expect(throws: WireError.self) { _ = try decoder.next() }
        #expect(throws: WireError.self) { _ = try decoder.next() }
    }
}
