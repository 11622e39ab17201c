/// The reader thread's receive buffer: the bytes reads go into, and the bytes its notifications keep.
///
/// Reads go straight into a ``NotificationBytes`` of ``standardCapacity``. The whole frames of a large read (at least
/// ``sharedMinimum`` bytes) stay where they were read, and their notifications point there: copying each read into
/// bytes of its own was 5 % of herald-bench fan-out 100's samples, whose reads are about 37 KB. The frames of a
/// smaller read are copied into bytes sized for them (``take(_:)``), so that a consumer keeping one notification of a
/// small read does not keep 64 KiB: what a notification keeps is at most four times its read's frames either way.
///
/// Notifications only read the bytes they point to, which never change while any notification refers to them: the
/// buffer reads only past them, and reuses bytes only once `isKnownUniquelyReferenced` says no notification is left.
/// When notifications still hold the buffer and it has too little room left, the next reads go into another one: the
/// last buffer so held, once its notifications are gone too, or a new one. With consumers on the reader thread, which
/// run before the next read, one buffer serves every read.
struct ReceiveBuffer {
    /// The usual size: one read's worth. A frame larger than that gets a buffer of its size until it has been routed.
    static let standardCapacity = 65_536
    /// The least room a read is given before the buffer makes more (``prepareForRead()``).
    static let minimumRead = 16_384
    /// Reads of whole frames from this size on are shared in place rather than copied.
    static let sharedMinimum = 16_384

    /// What reads go into; bytes `[start, current.count)` are read and not yet routed, at most the start of a frame.
    private var current: NotificationBytes
    /// Where the bytes not yet routed start in ``current``.
    private var start = 0
    /// The size of the frame that starts at ``start`` when it is not all read yet, so the next read has room for it.
    private var pending = 0
    /// The last buffer that notifications still held when reads moved on, reused once they are gone.
    private var spare: NotificationBytes?
    /// The bytes the last small read's frames were copied into, refilled by a later one once its notifications are
    /// gone.
    private var small: NotificationBytes?

    init() {
        current = NotificationBytes(capacity: Self.standardCapacity)
    }

    /// The bytes read and not yet routed.
    var unrouted: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: current.base + start, count: current.count - start)
    }

    /// The room for the next read, after ``prepareForRead()``.
    var free: UnsafeMutableRawBufferPointer {
        UnsafeMutableRawBufferPointer(start: current.base + current.count, count: current.capacity - current.count)
    }

    /// Makes room for the next read: at least ``minimumRead`` bytes, and the rest of a frame begun.
    mutating func prepareForRead() {
        let held = current.count - start
        let needed = max(Self.minimumRead, pending - held)
        if isKnownUniquelyReferenced(&current) {
            // No notification refers to these bytes: the frame begun moves to the front, where it is read on.
            if start > 0 {
                current.move(from: start)
                start = 0
            }
            if current.capacity - current.count >= needed && (current.capacity == Self.standardCapacity || held > 0) {
                return
            }
        } else if current.capacity - current.count >= needed {
            return
        }
        // Another buffer: the spare, free again, or a new one; of the standard size unless a frame needs more.
        let capacity = max(Self.standardCapacity, held + needed)
        var next: NotificationBytes
        if isKnownUniquelyReferenced(&spare), let reused = spare, reused.capacity == capacity {
            next = reused
            spare = nil
            next.reset()
        } else {
            next = NotificationBytes(capacity: capacity)
        }
        next.append(UnsafeRawBufferPointer(start: current.base + start, count: held))
        swap(&current, &next)
        start = 0
        // The one left is kept for later if notifications still use it and it is a standard one.
        if !isKnownUniquelyReferenced(&next) && next.capacity == Self.standardCapacity {
            spare = next
        }
    }

    /// Counts `read` bytes just read into ``free``.
    mutating func didRead(_ read: Int) {
        current.didAppend(read)
    }

    /// Notes that the bytes not yet routed begin a frame of `size` bytes in all.
    mutating func expect(frameOf size: Int) {
        pending = size
    }

    /// Takes the first `count` bytes not yet routed, whole frames, for notifications to point into.
    ///
    /// - Returns: the bytes and where the frames are in them: the buffer itself for a large read, a copy for a small
    ///   one.
    mutating func take(_ count: Int) -> (bytes: NotificationBytes, frames: Range<Int>) {
        precondition(count > 0 && count <= current.count - start, "took \(count) of \(current.count - start) bytes")
        defer {
            start += count
            pending = 0
        }
        if count >= Self.sharedMinimum {
            return (current, start..<(start + count))
        }
        let frames = UnsafeRawBufferPointer(start: current.base + start, count: count)
        if isKnownUniquelyReferenced(&small), let last = small, last.capacity >= count {
            last.reset()
            last.append(frames)
        } else {
            small = NotificationBytes(copying: frames)
        }
        return (small!, 0..<count)
    }
}
