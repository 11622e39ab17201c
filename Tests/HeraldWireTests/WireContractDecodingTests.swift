import HeraldWire
import Testing

/// The decisions of issue 20 that a receiver makes from a frame's bytes alone (wire.md, "The order of checks" and
/// "The `request` rule"): which error a faulty client frame gets, and which `request` that `ERROR` carries.
struct WireContractDecodingTests {
    /// A client frame's bytes, with the error the daemon answers and the `request` that error carries.
    struct Case: CustomTestStringConvertible, Sendable {
        var label: String
        var bytes: [UInt8]
        var code: WireError.Code
        var request: UInt32
        var testDescription: String { label }
    }

    /// A frame from raw parts: wire.md's header, then the body as given.
    static func frame(_ type: UInt8, flags: UInt8 = 0, _ body: [UInt8]) -> [UInt8] {
        let length = UInt32(body.count + 2)
        return [UInt8(length & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length >> 16 & 0xFF), UInt8(length >> 24)]
            + [type, flags] + body
    }

    static func u32(_ value: UInt32) -> [UInt8] {
        [UInt8(value & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value >> 16 & 0xFF), UInt8(value >> 24)]
    }

    static func str8(_ bytes: [UInt8]) -> [UInt8] { [UInt8(bytes.count)] + bytes }

    static let cases: [Case] = [
        // Point 3: flags are checked before the body, and the ERROR still names the frame's request.
        Case(label: "PING with flags", bytes: frame(0x06, flags: 1, u32(10)), code: .invalidFlags, request: 10),
        Case(
            label: "SUBSCRIBE with flag bit 2",
            bytes: frame(0x03, flags: 4, u32(5) + str8(Array("a".utf8))),
            code: .invalidFlags,
            request: 5
        ),
        Case(
            label: "SUBSCRIBE with OVERFLOW 3",
            bytes: frame(0x03, flags: 3, u32(5) + str8(Array("a".utf8))),
            code: .invalidFlags,
            request: 5
        ),
        Case(
            label: "HELLO with flags",
            bytes: frame(0x01, flags: 1, [1, 0, 1, 0, 0]),
            code: .invalidFlags,
            request: 0
        ),
        Case(label: "BYE with flags", bytes: frame(0x08, flags: 1, []), code: .invalidFlags, request: 0),
        Case(
            label: "PING with a byte left over",
            bytes: frame(0x06, u32(10) + [0]),
            code: .malformedFrame,
            request: 10
        ),
        Case(label: "PING cut inside its request", bytes: frame(0x06, [10, 0, 0]), code: .malformedFrame, request: 0),
        Case(
            label: "POST cut inside its name",
            bytes: frame(0x02, u32(7) + [20] + Array("abc".utf8)),
            code: .malformedFrame,
            request: 7
        ),
        Case(
            label: "WILL with a delay over the limit",
            bytes: frame(0x09, u32(9) + u32(3_600_001) + str8(Array("a".utf8))),
            code: .malformedFrame,
            request: 9
        ),
        Case(label: "a length under 2", bytes: [1, 0, 0, 0, 0x06], code: .malformedFrame, request: 0),
        Case(label: "a length over the limit", bytes: [0, 0, 0, 1, 0x06, 0], code: .frameTooLarge, request: 0),
        Case(label: "an unknown type", bytes: frame(0x7F, u32(10)), code: .unknownFrameType, request: 0),
        Case(
            label: "a daemon's ACK",
            bytes: frame(0x83, u32(10) + [UInt8](repeating: 0, count: 8)),
            code: .unknownFrameType,
            request: 0
        ),
        Case(
            label: "GET with request 0",
            bytes: frame(0x05, u32(0) + str8(Array("a".utf8))),
            code: .invalidRequest,
            request: 0
        ),
        Case(
            label: "POST to an invalid name",
            bytes: frame(0x02, u32(7) + str8(Array("a..b".utf8))),
            code: .invalidName,
            request: 7
        ),
        Case(
            label: "POST with a payload over the limit",
            bytes: frame(0x02, u32(3) + str8(Array("a".utf8)) + [UInt8](repeating: 1, count: 5)),
            code: .payloadTooLarge,
            request: 3
        ),
        // Point 5: a pattern that is not UTF-8 is INVALID_PATTERN, not MALFORMED_FRAME.
        Case(
            label: "SUBSCRIBE to a pattern that is not UTF-8",
            bytes: frame(0x03, u32(6) + str8([0x61, 0x2E, 0xFF])),
            code: .invalidPattern,
            request: 6
        ),
        // Point 16: a withdrawal carries no payload.
        Case(
            label: "WILL withdrawal with a payload",
            bytes: frame(0x09, u32(9) + u32(0) + str8([]) + Array("x".utf8)),
            code: .malformedFrame,
            request: 9
        ),
    ]

    @Test(arguments: cases)
    func aFaultyClientFrameGetsItsErrorWithTheRequestRule(_ fault: Case) {
        // Both of the daemon's paths: the buffering decoder, and the in-place reader heraldd uses on a read.
        #expect(throws: WireError.self) { try Frame.decode(fault.bytes, role: .daemon, maxPayload: 4) }
        do {
            _ = try Frame.decode(fault.bytes, role: .daemon, maxPayload: 4)
        } catch {
            #expect(error.code == fault.code, "\(error)")
            #expect(error.request == fault.request, "\(error)")
        }
        let scanner = FrameScanner(maxPayload: 4)
        // Array.withUnsafeBytes does not carry typed throws through, so the result travels as a Result.
        let inPlace = fault.bytes.withUnsafeBytes { raw in
            Result { () throws(WireError) -> Int? in
                guard let size = try scanner.frameSize(atStartOf: raw) else { return nil }
                return try FrameDecoder.withFrame(
                    UnsafeRawBufferPointer(rebasing: raw[..<size]),
                    role: .daemon,
                    maxPayload: 4
                ) { _ in 0 }
            }
        }
        switch inPlace {
        case .success:
            Issue.record("the in-place path accepted \(fault.label)")
        case .failure(let error):
            #expect(error.code == fault.code, "\(error)")
            #expect(error.request == fault.request, "\(error)")
        }
    }

    /// The `error-answering` vector is what the daemon's decoder says about the faulty `PING` it describes.
    @Test func theErrorAnsweringVectorIsTheDecodersAnswerToAPingWithFlags() throws {
        let vector = try #require(SpecFile.hexVectors()["error-answering"])
        do {
            _ = try Frame.decode(Self.frame(0x06, flags: 1, Self.u32(10)), role: .daemon)
            Issue.record("a PING with flags decoded")
        } catch {
            #expect(Frame.error(error).encoded() == vector)
        }
    }

    /// Point 6: versions 0 to 0 are a well-formed HELLO (the daemon then answers UNSUPPORTED_VERSION).
    @Test func helloWithVersionsZeroToZeroIsWellFormed() throws {
        let bytes = Self.frame(0x01, [0, 0, 0, 0] + Self.str8([]))
        #expect(try Frame.decode(bytes, role: .daemon) == .hello(.init(minVersion: 0, maxVersion: 0, client: "")))
    }

    /// Point 1: a str8 carries at most 255 bytes, so a 255-byte name is the longest any frame can hold.
    @Test func theLongestNameAFrameCanCarryIs255Bytes() throws {
        let name = String(repeating: "n", count: 255)
        let bytes = Self.frame(0x02, Self.u32(1) + Self.str8(Array(name.utf8)))
        #expect(try Frame.decode(bytes, role: .daemon) == .post(.init(request: 1, name: name, payload: [])))
        #expect(throws: WireError.self) { try Name.validate(name + "n") }
    }
}
