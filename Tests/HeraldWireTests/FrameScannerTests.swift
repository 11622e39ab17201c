import HeraldWire
import Testing

/// The frame boundaries a reader finds with the scanner, and its errors, which are the decoder's.
struct FrameScannerTests {
    /// The scanner's answer for `bytes`.
    func size(_ bytes: ArraySlice<UInt8>) throws -> Int? {
        try Array(bytes).withUnsafeBytes { raw throws -> Int? in try FrameScanner().frameSize(atStartOf: raw) }
    }

    @Test func findsTheSizeOfEachFrameOnceItsPrefixIsIn() throws {
        let frames = [Frame.bye.encoded(), Frame.ping(Frame.Ping(request: 7)).encoded()]
        let stream = frames.flatMap { $0 }
        for cut in 0..<4 {
            #expect(try size(stream[..<cut]) == nil)
        }
        #expect(try size(stream[..<4]) == frames[0].count)
        #expect(try size(stream[frames[0].count...]) == frames[1].count)
    }

    @Test(arguments: [
        ([1, 0, 0, 0] as [UInt8], WireError(.malformedFrame, "frame length 1 is under the minimum of 2")),
        ([0x01, 0x05, 0x01, 0x00], WireError(.frameTooLarge, "frame length 66817 is over the limit of 66560 bytes")),
    ])
    func rejectsLengthsAsTheDecoderDoes(prefix: [UInt8], error: WireError) {
        #expect(throws: error) {
            _ = try size(prefix[...])
        }
        var decoder = FrameDecoder(role: .client)
        decoder.append(contentsOf: prefix)
        #expect(throws: error) { try decoder.next() }
    }
}
