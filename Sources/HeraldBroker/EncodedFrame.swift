public import HeraldWire

/// A frame encoded once into memory of its own, shared by every queue that sends it.
///
/// A live post is encoded into one `EncodedFrame` and the same bytes go to every subscribed
/// connection; the bytes stay at a fixed address until the last queue lets go, so the I/O layer can
/// hand them to `writev` directly.
public final class EncodedFrame {
    /// The frame's bytes, header included.
    public let bytes: UnsafeRawBufferPointer

    /// Encodes `frame`.
    public init(_ frame: Frame) {
        let size = frame.encodedSize
        let memory = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 8)
        frame.encode(to: memory)
        self.bytes = UnsafeRawBufferPointer(memory)
    }

    deinit {
        bytes.deallocate()
    }
}
