/// The bytes that notifications' names and payloads are read from.
///
/// The reader thread copies each read's whole frames into one of these and every notification decoded from that
/// read points into it: one allocation per read instead of a `String` and an array per notification. A notification
/// the library makes itself (a notice) gets one of its own, holding its name then its payload.
///
/// Immutable while shared, so sharing it between threads is safe: that is why it is `@unchecked Sendable`. The
/// reader thread refills the bytes of an earlier read only once nothing else refers to them.
@usableFromInline
final class NotificationBytes: @unchecked Sendable {
    @usableFromInline let base: UnsafeMutableRawPointer
    /// The bytes held. Changed only by ``refill(from:)``, while nothing else refers to these bytes.
    private(set) var count: Int
    /// The bytes there is room for.
    let capacity: Int
    /// The notice, for a notification the library made; nil for bytes read from the daemon.
    let notice: HeraldNotification.Notice?

    /// Copies `bytes`, with room for up to twice as many so that later reads of a similar size can reuse the
    /// storage (``refill(from:)``): the next power of two, at least 256, for reads up to 64 KiB (one read of the
    /// receive buffer); exactly their size for larger ones (a single large frame).
    init(copying bytes: UnsafeRawBufferPointer) {
        self.count = bytes.count
        self.capacity = Self.roomFor(bytes.count)
        self.base = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 8)
        if let source = bytes.baseAddress, bytes.count > 0 {
            base.copyMemory(from: source, byteCount: bytes.count)
        }
        self.notice = nil
    }

    /// The room ``init(copying:)`` makes for `count` bytes.
    static func roomFor(_ count: Int) -> Int {
        guard count > 256 else { return 256 }
        guard count <= 65_536 else { return count }
        return 1 << (Int.bitWidth - (count - 1).leadingZeroBitCount)
    }

    /// Replaces the bytes with a copy of `bytes`, which must fit in ``capacity``.
    ///
    /// Only for the reader thread's own bytes, once no notification refers to them any more
    /// (`isKnownUniquelyReferenced`): notifications read them without a lock because they never change while shared.
    func refill(from bytes: UnsafeRawBufferPointer) {
        precondition(bytes.count <= capacity, "refilled with \(bytes.count) bytes, room for \(capacity)")
        if let source = bytes.baseAddress, bytes.count > 0 {
            base.copyMemory(from: source, byteCount: bytes.count)
        }
        count = bytes.count
    }

    /// Copies `name`, then `payload` right after it.
    init(_ name: UnsafeRawBufferPointer, _ payload: UnsafeRawBufferPointer, notice: HeraldNotification.Notice?) {
        self.count = name.count + payload.count
        self.capacity = max(1, name.count + payload.count)
        self.base = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 8)
        if let source = name.baseAddress, name.count > 0 {
            base.copyMemory(from: source, byteCount: name.count)
        }
        if let source = payload.baseAddress, payload.count > 0 {
            (base + name.count).copyMemory(from: source, byteCount: payload.count)
        }
        self.notice = notice
    }

    deinit {
        base.deallocate()
    }
}
