/// What a notification keeps alive, and how a stream whose consumer lags keeps no more than it needs.
extension HeraldNotification {
    /// The bytes this notification keeps allocated: its own, or the whole read it points into (shared with the other
    /// notifications of that read).
    var retainedByteCount: Int { bytes.capacity }

    /// Its name and payload, in bytes: what it would keep on its own.
    var ownByteCount: Int { withNameBytes { $0.count } + Int(payloadCount) }

    /// This notification, with bytes of its own when the bytes it points into are more than twice its own: kept for
    /// long, it then keeps at most about twice what it holds, not a whole read of up to 64 KiB.
    func compacted() -> HeraldNotification {
        guard retainedByteCount > 2 * ownByteCount else { return self }
        return detached()
    }
}
