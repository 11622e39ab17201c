import HeraldMQTT
import Testing

struct PacketDecoderTests {
    static let packets: [Packet] = [
        .connack(.init()),
        .publish(
            .init(topic: "herald/a/b", payload: Array(repeating: 7, count: 300), qos: .atLeastOnce, packetIdentifier: 1)
        ),
        .puback(.init(packetIdentifier: 1)),
        .pingresp,
        .disconnect(.init(reasonCode: .serverShuttingDown)),
    ]

    @Test func decodesSeveralPacketsArrivingInOneRead() throws {
        var decoder = PacketDecoder()
        decoder.append(contentsOf: try Self.packets.flatMap { try $0.encode() })
        var decoded: [Packet] = []
        while let packet = try decoder.next() { decoded.append(packet) }
        #expect(decoded == Self.packets)
        #expect(decoder.bufferedByteCount == 0)
    }

    @Test func decodesPacketsArrivingOneByteAtATime() throws {
        var decoder = PacketDecoder()
        var decoded: [Packet] = []
        for byte in try Self.packets.flatMap({ try $0.encode() }) {
            decoder.append(contentsOf: [byte])
            while let packet = try decoder.next() { decoded.append(packet) }
        }
        #expect(decoded == Self.packets)
    }

    @Test func refusesAPacketOverTheMaximumBeforeItsBodyArrives() {
        var decoder = PacketDecoder(maximumPacketSize: 128)
        // PUBLISH with a Remaining Length of 16,384: only the fixed header has arrived.
        decoder.append(contentsOf: [0x30, 0x80, 0x80, 0x01])
        #expect(throws: PacketError(.packetTooLarge, "a packet of 16388 bytes is over the Maximum Packet Size of 128"))
        {
            try decoder.next()
        }
        // The decoder stays failed, whatever comes next.
        decoder.append(contentsOf: [0xC0, 0x00])
        #expect(throws: PacketError.self) { try decoder.next() }
    }

    @Test func acceptsAPacketOfExactlyTheMaximum() throws {
        let packet = Packet.publish(.init(topic: "t", payload: Array(repeating: 1, count: 100)))
        let bytes = try packet.encode()
        var decoder = PacketDecoder(maximumPacketSize: bytes.count)
        decoder.append(contentsOf: bytes)
        #expect(try decoder.next() == packet)
        var smaller = PacketDecoder(maximumPacketSize: bytes.count - 1)
        smaller.append(contentsOf: bytes)
        #expect(throws: PacketError.self) { try smaller.next() }
    }

    @Test func waitsForTheRestOfATruncatedPacket() throws {
        let bytes = try Packet.puback(.init(packetIdentifier: 9)).encode()
        var decoder = PacketDecoder()
        decoder.append(contentsOf: bytes.dropLast())
        #expect(try decoder.next() == nil)
        decoder.append(contentsOf: bytes.suffix(1))
        #expect(try decoder.next() == .puback(.init(packetIdentifier: 9)))
    }

    @Test func refusesAFifthRemainingLengthByteBeforeMoreArrives() {
        var decoder = PacketDecoder()
        decoder.append(contentsOf: [0x30, 0xFF, 0xFF, 0xFF, 0xFF])
        #expect(
            throws: PacketError(.malformedPacket, "Remaining Length is a variable byte integer longer than 4 bytes")
        ) {
            try decoder.next()
        }
    }

    @Test func stopsAtTheFirstBadPacketAndKeepsThePacketsBeforeIt() throws {
        var decoder = PacketDecoder()
        decoder.append(contentsOf: [0xD0, 0x00, 0x00, 0x00, 0xD0, 0x00])
        #expect(try decoder.next() == .pingresp)
        #expect(throws: PacketError(.malformedPacket, "packet type 0 is reserved")) { try decoder.next() }
        #expect(throws: PacketError(.malformedPacket, "packet type 0 is reserved")) { try decoder.next() }
    }

    @Test func refusesATruncatedOrOverlongSinglePacket() {
        #expect(throws: PacketError(.malformedPacket, "truncated packet: 3 bytes")) {
            try Packet.decode([0x40, 0x02, 0x00])
        }
        #expect(throws: PacketError(.malformedPacket, "1 bytes after the packet")) {
            try Packet.decode([0xC0, 0x00, 0xC0])
        }
    }
}
