/// Finds where whole frames end in received bytes, without copying or decoding them.
///
/// For a reader that keeps its own receive buffer and decodes frames where they lie: the library's reader thread
/// reads `NOTIFY` with ``NotifyView`` and everything else with ``FrameDecoder``'s `decodeBody`. It checks the length
/// prefix exactly as ``FrameDecoder`` does, with the same errors, as soon as the prefix is in.
public struct FrameScanner: Sendable {
    /// The largest `length` prefix accepted.
    public let maxFrameLength: Int

    /// Creates a scanner for a connection whose payloads may be up to `maxPayload` bytes.
    public init(maxPayload: Int = Limits.defaultMaxPayload) {
        self.maxFrameLength = Limits.maxFrameLength(maxPayload: maxPayload)
    }

    /// The size of the frame at the start of `bytes`, its 4-byte length prefix included.
    ///
    /// - Returns: the size, which may be more than `bytes.count` when the frame is not all there yet; nil when not
    ///   even the length prefix is.
    /// - Throws: `MALFORMED_FRAME` for a length under 2, `FRAME_TOO_LARGE` for one over ``maxFrameLength``.
    public func frameSize(atStartOf bytes: UnsafeRawBufferPointer) throws(WireError) -> Int? {
        guard bytes.count >= 4 else { return nil }
        let length = Int(UInt32(littleEndian: bytes.loadUnaligned(as: UInt32.self)))
        guard length >= 2 else {
            throw WireError(.malformedFrame, "frame length \(length) is under the minimum of 2")
        }
        guard length <= maxFrameLength else {
            throw WireError(.frameTooLarge, "frame length \(length) is over the limit of \(maxFrameLength) bytes")
        }
        return 4 + length
    }
}
