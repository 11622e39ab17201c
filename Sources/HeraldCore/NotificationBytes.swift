/// The bytes that notifications' names and payloads are read from.
///
/// The reader thread reads into one of these (``ReceiveBuffer``) and every notification decoded from a read points
/// into it, or into a copy of the read's frames: no `String` and no array per notification. A notification the
/// library makes itself (a notice) gets one of its own, holding its name then its payload.
///
/// The bytes a notification points to never change while it exists, so sharing them between threads is safe: that is
/// why it is `@unchecked Sendable`. Only the reader thread changes anything here: it appends past the bytes held
/// (``append(_:)``, ``didAppend(_:)``), which no notification points to, and it moves or overwrites bytes
/// (``move(from:)``, ``reset()``) only once `isKnownUniquelyReferenced` says no notification is left. ``count`` is the
/// reader's alone.
@usableFromInline
final class NotificationBytes: @unchecked Sendable {
    @usableFromInline let base: UnsafeMutableRawPointer
    /// The bytes held, from ``base``; read and written by the reader thread only.
    private(set) var count: Int
    /// The bytes there is room for.
    let capacity: Int
    /// The notice, for a notification the library made; nil for bytes read from the daemon.
    let notice: HeraldNotification.Notice?

    /// Empty bytes with room for `capacity`.
    init(capacity: Int) {
        self.count = 0
        self.capacity = max(1, capacity)
        self.base = UnsafeMutableRawPointer.allocate(byteCount: self.capacity, alignment: 16)
        self.notice = nil
    }

    /// Copies `bytes`, with room for up to twice as many so that later reads of a similar size can reuse the
    /// storage: the next power of two, at least 256, for up to 64 KiB; exactly their size for more (a single large
    /// frame).
    convenience init(copying bytes: UnsafeRawBufferPointer) {
        self.init(capacity: Self.roomFor(bytes.count))
        append(bytes)
    }

    /// The room ``init(copying:)`` makes for `count` bytes.
    static func roomFor(_ count: Int) -> Int {
        guard count > 256 else { return 256 }
        guard count <= 65_536 else { return count }
        return 1 << (Int.bitWidth - (count - 1).leadingZeroBitCount)
    }

    /// Copies `bytes` after the bytes held; they must fit.
    func append(_ bytes: UnsafeRawBufferPointer) {
        precondition(bytes.count <= capacity - count, "appended \(bytes.count) bytes, room for \(capacity - count)")
        if let source = bytes.baseAddress, bytes.count > 0 {
            (base + count).copyMemory(from: source, byteCount: bytes.count)
        }
        count += bytes.count
    }

    /// Counts `read` bytes just written after the bytes held.
    func didAppend(_ read: Int) {
        precondition(read >= 0 && read <= capacity - count, "read \(read) bytes into \(capacity - count) free")
        count += read
    }

    /// Moves the bytes from `offset` on to the start. Only once nothing else refers to these bytes.
    func move(from offset: Int) {
        precondition(offset >= 0 && offset <= count, "moved from \(offset) of \(count) bytes")
        if offset > 0 && offset < count {
            base.copyMemory(from: base + offset, byteCount: count - offset)
        }
        count -= offset
    }

    /// Forgets the bytes held. Only once nothing else refers to them.
    func reset() {
        count = 0
    }

    /// Copies `name`, then `payload` right after it.
    init(_ name: UnsafeRawBufferPointer, _ payload: UnsafeRawBufferPointer, notice: HeraldNotification.Notice?) {
        self.count = name.count + payload.count
        self.capacity = max(1, name.count + payload.count)
        self.base = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16)
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
