import HeraldWire

extension Broker {
    /// A will waiting for its grace period to pass.
    @usableFromInline
    struct PendingWill {
        let due: UInt64
        let will: Frame.Will
        let sender: Sender
    }

    mutating func schedule(_ will: Frame.Will, from sender: Sender, monotonicNow: UInt64) {
        let due = monotonicNow + UInt64(will.delayMilliseconds) * 1_000_000
        pendingWills.append(PendingWill(due: due, will: will, sender: sender))
    }

    /// Whether any will waits for its grace period. The owner asks every turn, so it is inlined: a call on the
    /// owner's `broker` property would copy the whole broker to pass it.
    @inlinable @inline(__always)
    public var hasPendingWills: Bool { !pendingWills.isEmpty }

    /// When the next will is due, on the owner's monotonic clock, or nil when none is pending.
    public var nextWillDeadline: UInt64? {
        pendingWills.lazy.map(\.due).min()
    }

    /// Posts every will whose grace period has passed, as its connection's sender.
    ///
    /// - Parameters:
    ///   - monotonicNow: The owner's monotonic clock, nanoseconds.
    ///   - realtimeNow: Nanoseconds since 1970, to stamp the posts.
    /// - Returns: How many wills were posted.
    @discardableResult
    public mutating func postDueWills(monotonicNow: UInt64, realtimeNow: UInt64) -> Int {
        guard pendingWills.contains(where: { $0.due <= monotonicNow }) else { return 0 }
        let due = pendingWills.filter { $0.due <= monotonicNow }.sorted { $0.due < $1.due }
        pendingWills.removeAll { $0.due <= monotonicNow }
        for pending in due {
            let will = pending.will
            // A retained will may not grow the retained set past its limits; it is still delivered live.
            let canRetain =
                (retained[will.name] != nil || retained.count < configuration.bounds.maxRetained)
                && canRetain(name: will.name, payloadCount: will.payload.count)
            post(
                name: will.name,
                payload: will.payload,
                retain: will.retain && (canRetain || will.payload.isEmpty),
                sender: pending.sender,
                now: realtimeNow
            )
        }
        return due.count
    }
}
