/// The bytes that notifications' names and payloads are read from.
///
/// The reader thread copies each read's whole frames into one of these and every notification decoded from that
/// read points into it: one allocation per read instead of a `String` and an array per notification. A notification
/// the library makes itself (a notice) gets one of its own, holding its name then its payload.
///
/// Immutable once made, so sharing it between threads is safe: that is why it is `@unchecked Sendable`.
@usableFromInline
final class NotificationBytes: @unchecked Sendable {
    @usableFromInline let base: UnsafeMutableRawPointer
    let count: Int
    /// The notice, for a notification the library made; nil for bytes read from the daemon.
    let notice: HeraldNotification.Notice?

    /// Copies `bytes`.
    init(copying bytes: UnsafeRawBufferPointer) {
        self.count = bytes.count
        self.base = UnsafeMutableRawPointer.allocate(byteCount: max(1, bytes.count), alignment: 8)
        if let source = bytes.baseAddress, bytes.count > 0 {
            base.copyMemory(from: source, byteCount: bytes.count)
        }
        self.notice = nil
    }

    /// Copies `name`, then `payload` right after it.
    init(_ name: UnsafeRawBufferPointer, _ payload: UnsafeRawBufferPointer, notice: HeraldNotification.Notice?) {
        self.count = name.count + payload.count
        self.base = UnsafeMutableRawPointer.allocate(byteCount: max(1, count), alignment: 8)
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
