public import HeraldWire

/// Counts the bytes of every encoded frame alive, however many queues share each one: the daemon's
/// memory for queued output, which `--max-queued-bytes` bounds.
public final class FrameAccounting {
    /// Bytes of encoded frames alive now.
    public fileprivate(set) var bytes = 0

    public init() {}
}

/// A frame encoded once into memory of its own, shared by every queue that sends it.
///
/// A live post is encoded into one `EncodedFrame` and the same bytes go to every subscribed
/// connection; the bytes stay at a fixed address until the last queue lets go, so the I/O layer can
/// hand them to `writev` directly.
public final class EncodedFrame {
    /// The frame's bytes, header included.
    public let bytes: UnsafeRawBufferPointer
    /// For a live `NOTIFY`, the name posted to: what `COALESCE` compares.
    public let name: String?
    private let accounting: FrameAccounting?

    /// Encodes `frame`, counting its bytes in `accounting` while it lives.
    public init(_ frame: Frame, accounting: FrameAccounting? = nil) {
        let size = frame.encodedSize
        let memory = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 8)
        frame.encode(to: memory)
        self.bytes = UnsafeRawBufferPointer(memory)
        if case .notify(let notify) = frame, notify.subscription == 0 {
            self.name = notify.name
        } else {
            self.name = nil
        }
        self.accounting = accounting
        accounting?.bytes += size
    }

    deinit {
        accounting?.bytes -= bytes.count
        bytes.deallocate()
    }
}
