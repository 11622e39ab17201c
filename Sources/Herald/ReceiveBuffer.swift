/// The reader thread's receive buffer: bytes read from the socket and not yet routed, which after each pass are at
/// most the start of one frame.
///
/// It owns its memory and frees it once, so it cannot be copied.
struct ReceiveBuffer: ~Copyable {
    /// The usual size: one read's worth. A frame larger than that grows the buffer until it has been routed.
    static let standardCapacity = 65_536

    private var base: UnsafeMutableRawPointer
    private(set) var capacity: Int
    /// Bytes held, from the start.
    private(set) var count = 0

    init() {
        capacity = Self.standardCapacity
        base = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16)
    }

    deinit {
        base.deallocate()
    }

    /// The bytes held.
    var bytes: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: base, count: count)
    }

    /// The free space after the bytes held, for the next read.
    var free: UnsafeMutableRawBufferPointer {
        UnsafeMutableRawBufferPointer(start: base + count, count: capacity - count)
    }

    /// Counts `read` bytes just read into ``free``.
    mutating func didRead(_ read: Int) {
        precondition(read >= 0 && count + read <= capacity, "read \(read) bytes into \(capacity - count) free")
        count += read
    }

    /// Drops the first `routed` bytes, moving what follows them to the start.
    mutating func consume(_ routed: Int) {
        precondition(routed >= 0 && routed <= count, "consumed \(routed) of \(count) bytes")
        let rest = count - routed
        if rest > 0 && routed > 0 {
            base.copyMemory(from: base + routed, byteCount: rest)
        }
        count = rest
        if count == 0 && capacity > Self.standardCapacity {
            reallocate(Self.standardCapacity)
        }
    }

    /// Makes room for a frame of `size` bytes in all.
    mutating func reserve(_ size: Int) {
        if size > capacity { reallocate(size) }
    }

    private mutating func reallocate(_ newCapacity: Int) {
        let new = UnsafeMutableRawPointer.allocate(byteCount: newCapacity, alignment: 16)
        new.copyMemory(from: base, byteCount: count)
        base.deallocate()
        base = new
        capacity = newCapacity
    }
}
