import HeraldDBus
import Testing

@Suite struct RoundTripTests {
    /// A struct holding an array of dict entries of variants, and every basic type.
    static let everyType: [DBusValue] = [
        .byte(0xFE), .boolean(true), .int16(-2), .uint16(65000), .int32(-70000), .uint32(4_000_000_000),
        .int64(-(1 << 40)), .uint64(1 << 63), .double(-1.5), .string("héllo ✓"), .objectPath("/a/b_c/D1"),
        .signature("a{sv}(iu)"), .unixFD(0),
        .structure([
            .string("s"),
            .dictionary(
                key: .string,
                value: .variant,
                [
                    (.string("int"), .variant(.int32(3))), (.string("list"), .variant(.array(.byte, [.byte(1)]))),
                    (.string("nested"), .variant(.variant(.structure([.boolean(false), .double(2)])))),
                ]
            ),
        ]),
        .array(.int64, []), .array(.structure([.byte]), []),
        .dictionary(key: .uint32, value: .array(.string), [(.uint32(1), .array(.string, [.string("x")]))]),
    ]

    static func message(bigEndian: Bool) throws -> DBusMessage {
        var message = try DBusMessage.methodCall(
            destination: "org.example.Service",
            path: "/org/example",
            interface: "org.example.Iface",
            member: "Everything",
            body: everyType
        )
        message.fields.append((DBusMessage.FieldCode.unixFDs.rawValue, .uint32(1)))
        message.serial = 9
        message.bigEndian = bigEndian
        return message
    }

    @Test(arguments: [false, true])
    func everyTypeSurvivesARoundTrip(bigEndian: Bool) throws {
        let message = try Self.message(bigEndian: bigEndian)
        let bytes = try message.encoded()
        let decoded = try DBusMessage(decoding: bytes)
        #expect(decoded == message)
        #expect(decoded.signature == "ybnqiuxtdsogh(sa{sv})axa(y)a{uas}")
    }

    @Test func emptyArrayIsPaddedToItsElementAlignment() throws {
        var writer = Marshaller()
        try writer.write(.byte(1))
        try writer.write(.array(.int64, []))
        // byte, 3 padding, length 0, then padding to 8 that the length does not count.
        #expect(writer.bytes == [1, 0, 0, 0, 0, 0, 0, 0])
        var structs = Marshaller()
        try structs.write(.array(.structure([.byte]), []))
        #expect(structs.bytes == [0, 0, 0, 0, 0, 0, 0, 0])
    }

    @Test func dictEntriesAreAlignedToEight() throws {
        var writer = Marshaller()
        try writer.write(.dictionary(key: .byte, value: .byte, [(.byte(1), .byte(2))]))
        #expect(writer.bytes == [2, 0, 0, 0, 0, 0, 0, 0, 1, 2])
    }

    @Test func variantCarriesItsSignature() throws {
        var writer = Marshaller()
        try writer.write(.variant(.uint16(0x0102)))
        #expect(writer.bytes == [1, UInt8(ascii: "q"), 0, 0, 0x02, 0x01])
    }

    @Test func decoderSplitsAStreamFedByteByByte() throws {
        var stream: [UInt8] = []
        stream += Vectors.helloReply
        stream += Vectors.nameAcquired
        stream += Vectors.propertiesChanged
        var decoder = MessageDecoder()
        var messages: [DBusMessage] = []
        for byte in stream {
            #expect(decoder.bytesNeeded > 0)
            decoder.append([byte])
            while let message = try decoder.nextMessage() { messages.append(message) }
        }
        #expect(messages.map(\.member) == [nil, "NameAcquired", "PropertiesChanged"])
        #expect(decoder.bufferedCount == 0)
    }

    @Test func decoderSaysHowManyBytesTheMessageNeedsOnceItsHeaderIsIn() throws {
        var decoder = MessageDecoder()
        decoder.append(Array(Vectors.nameAcquired[0..<16]))
        #expect(try decoder.nextMessage() == nil)
        #expect(decoder.bytesNeeded == Vectors.nameAcquired.count - 16)
    }
}
