// A libFuzzer target for the MQTT bridge's input handling: HeraldMQTT's PacketDecoder, which reads whatever a
// broker sends.
//
// Built by Tests/Fuzz/run.sh together with the sources of HeraldMQTT as one module (so there is no `import` here).
// The input's first byte chooses how the rest arrives (in reads of 1 to 64 bytes) and the decoder's maximum packet
// size; the rest is the byte stream. Every crash is a bug: the bridge must never trap on a broker's bytes. Beyond
// the traps of the code under test, this checks that:
// - every packet decoded encodes without error, and those bytes decode to the same packet and encode to the same
//   bytes again (the codec's one canonical form);
// - how the bytes are split into reads changes nothing: the same packets, then the same error or none;
// - an error carries one of the reason codes a decoder reports, and the decoder stays failed after it;
// - no packet decoded is larger than the maximum packet size.

private func require(_ condition: Bool, _ message: @autoclosure () -> String, line: UInt = #line) {
    if !condition { fatalError("fuzz check failed: \(message())", line: line) }
}

/// The reason codes the decoder may throw with.
private let decoderCodes: Set<UInt8> = [0x81, 0x82, 0x84, 0x8F, 0x90, 0x95]

/// Decodes `stream` arriving in reads of `chunk` bytes (0: all at once): the packets, and the error that ended it.
private func decodeAll(
    _ stream: UnsafeBufferPointer<UInt8>,
    chunk: Int,
    maximumPacketSize: Int
) -> (
    [Packet], PacketError?
) {
    var decoder = PacketDecoder(maximumPacketSize: maximumPacketSize)
    var packets: [Packet] = []
    var offset = 0
    repeat {
        let end = chunk == 0 ? stream.count : min(stream.count, offset + chunk)
        decoder.append(contentsOf: UnsafeBufferPointer(rebasing: stream[offset..<end]))
        offset = end
        do {
            while let packet = try decoder.next() { packets.append(packet) }
        } catch {
            require(decoderCodes.contains(error.code.rawValue), "the decoder threw with \(error.code): \(error)")
            do {
                _ = try decoder.next()
                require(false, "the decoder went on after \(error)")
            } catch let again {
                require(again == error, "the decoder failed with \(error), then with \(again)")
            }
            return (packets, error)
        }
    } while offset < stream.count
    return (packets, nil)
}

private func check(_ packet: Packet, maximumPacketSize: Int) {
    let bytes: [UInt8]
    do {
        bytes = try packet.encode()
    } catch {
        require(false, "a decoded \(packet.type) does not encode: \(error)")
        return
    }
    require(
        bytes.count <= maximumPacketSize,
        "a decoded \(packet.type) encodes to \(bytes.count) bytes, over the maximum"
    )
    do {
        let again = try Packet.decode(bytes)
        require(again == packet, "\(packet.type) decoded, encoded and decoded again differs: \(packet) vs \(again)")
        require(try again.encode() == bytes, "\(packet.type) does not encode to the same bytes twice")
    } catch {
        require(false, "a decoded \(packet.type) encodes to bytes that do not decode: \(error)")
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let control = data[0]
    let stream = UnsafeBufferPointer(start: data + 1, count: size - 1)
    // Small bounds reach the Packet too large path with short inputs; the largest is the protocol's own.
    let maximumPacketSize = [16, 64, 512, 1 + 4 + VariableByteInteger.maximum][Int(control >> 6)]
    let chunk = 1 + Int(control & 0x3f)
    let (whole, wholeError) = decodeAll(stream, chunk: 0, maximumPacketSize: maximumPacketSize)
    let (split, splitError) = decodeAll(stream, chunk: chunk, maximumPacketSize: maximumPacketSize)
    require(whole == split, "reads of \(chunk) bytes decoded \(split.count) packets, one read \(whole.count)")
    require(
        wholeError == splitError,
        "reads of \(chunk) bytes ended with \(String(describing: splitError)), one read with \(String(describing: wholeError))"
    )
    for packet in whole { check(packet, maximumPacketSize: maximumPacketSize) }
    return 0
}
