import HeraldMQTT
import Testing

struct VariableByteIntegerTests {
    /// The table of §1.5.5 (OASIS MQTT Version 5.0): the smallest and largest value of each length.
    static let specificationTable: [(Int, [UInt8])] = [
        (0, [0x00]), (127, [0x7F]),
        (128, [0x80, 0x01]), (16_383, [0xFF, 0x7F]),
        (16_384, [0x80, 0x80, 0x01]), (2_097_151, [0xFF, 0xFF, 0x7F]),
        (2_097_152, [0x80, 0x80, 0x80, 0x01]), (268_435_455, [0xFF, 0xFF, 0xFF, 0x7F]),
    ]

    @Test(arguments: specificationTable)
    func encodesAndParsesTheSpecificationTable(value: Int, bytes: [UInt8]) throws {
        var encoded: [UInt8] = []
        VariableByteInteger.append(value, to: &encoded)
        #expect(encoded == bytes)
        #expect(VariableByteInteger.encodedCount(value) == bytes.count)
        let parsed = try VariableByteInteger.parse(bytes, "test")
        #expect(parsed?.value == value)
        #expect(parsed?.count == bytes.count)
    }

    @Test func needsMoreBytesWhileTheContinuationBitIsSet() throws {
        #expect(try VariableByteInteger.parse([0x80, 0x80], "test") == nil)
        #expect(try VariableByteInteger.parse([], "test") == nil)
    }

    @Test func refusesAFifthByte() {
        #expect(throws: PacketError(.malformedPacket, "test is a variable byte integer longer than 4 bytes")) {
            try VariableByteInteger.parse([0xFF, 0xFF, 0xFF, 0xFF, 0x7F], "test")
        }
    }

    @Test(arguments: [[0x80, 0x00], [0xFF, 0x80, 0x00], [0x80, 0x80, 0x80, 0x00]] as [[UInt8]])
    func refusesALongerFormThanNeeded(bytes: [UInt8]) {
        #expect(throws: PacketError.self) { try VariableByteInteger.parse(bytes, "test") }
    }
}
