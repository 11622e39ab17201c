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
/// hand them to `writev` directly. The bytes live in the same heap object as the reference count (a
/// `ManagedBuffer`), so a frame costs one allocation, not an object plus a separate buffer.
public struct EncodedFrame {
    struct Header {
        let count: Int
        let name: String?
        let accounting: FrameAccounting?
    }

    final class Storage: ManagedBuffer<Header, UInt8> {
        deinit {
            withUnsafeMutablePointerToHeader { header in
                header.pointee.accounting?.bytes -= header.pointee.count
            }
        }
    }

    private let storage: Storage

    /// The frame's bytes, header included; valid while any copy of this value is alive.
    public var bytes: UnsafeRawBufferPointer {
        // The elements of a ManagedBuffer do not move while it lives, and `storage` keeps it alive. Through
        // the pointers, not `header`, whose class property access would be checked for exclusivity at run time.
        storage.withUnsafeMutablePointers { header, elements in
            UnsafeRawBufferPointer(start: elements, count: header.pointee.count)
        }
    }

    /// For a live `NOTIFY`, the name posted to: what `COALESCE` compares.
    public var name: String? { storage.withUnsafeMutablePointerToHeader { $0.pointee.name } }

    /// Encodes `frame`, counting its bytes in `accounting` while it lives.
    public init(_ frame: Frame, accounting: FrameAccounting? = nil) {
        let size = frame.encodedSize
        var name: String?
        if case .notify(let notify) = frame, notify.subscription == 0 {
            name = notify.name
        }
        let buffer = Storage.create(minimumCapacity: size) { _ in
            Header(count: size, name: name, accounting: accounting)
        }
        storage = unsafeDowncast(buffer, to: Storage.self)
        storage.withUnsafeMutablePointerToElements { elements in
            _ = frame.encode(to: UnsafeMutableRawBufferPointer(start: elements, count: size))
        }
        accounting?.bytes += size
    }
}
