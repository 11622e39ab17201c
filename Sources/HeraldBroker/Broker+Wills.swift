import HeraldWire

extension Broker {
    /// A will waiting for its grace period to pass.
    @usableFromInline
    struct PendingWill {
        let will: Frame.Will
        let sender: Sender
        /// Its id in the state log.
        let id: UInt64
        /// The `HELLO` label of its client.
        let client: String
        /// Whether it was restored from a log while its connection was open: then its client coming back
        /// withdraws it (Broker+State).
        var orphaned = false
    }

    /// What a will is charged against `maxWillBytes`: its name and payload.
    static func willCost(_ will: Frame.Will) -> Int {
        will.name.utf8.count + will.payload.count
    }

    /// Counts a will in, or (`sign` -1) out of, the wills held: registered on an open connection or pending.
    mutating func charge(_ will: Frame.Will, _ sign: Int) {
        willCount += sign
        willBytes += sign * Self.willCost(will)
    }

    /// Why `will` cannot replace the connection's current will (if any) within `maxWills` and `maxWillBytes`.
    func willRefusal(_ will: Frame.Will, replacing current: Frame.Will?) -> WireError? {
        let bounds = configuration.bounds
        let count = willCount - (current == nil ? 0 : 1) + 1
        let bytes = willBytes - (current.map(Self.willCost) ?? 0) + Self.willCost(will)
        guard count > bounds.maxWills || bytes > bounds.maxWillBytes else { return nil }
        return WireError(
            .tooManyWills,
            "heraldd already holds \(willCount) wills of \(willBytes) bytes, registered or pending; this one would pass "
                + "the limit of \(bounds.maxWills) wills or \(bounds.maxWillBytes) bytes",
            request: will.request
        )
    }

    /// The connection ended without `BYE`: its will, still charged, waits for its grace period.
    mutating func schedule(_ will: Frame.Will, from sender: Sender, id: UInt64, client: String, monotonicNow: UInt64) {
        let due = monotonicNow + UInt64(will.delayMilliseconds) * 1_000_000
        pendingWills.insert(PendingWill(will: will, sender: sender, id: id, client: client), deadline: due)
        willBecamePending(id, due: due)
    }

    /// Whether any will waits for its grace period. The owner asks every turn, so it is inlined: a call on the
    /// owner's `broker` property would copy the whole broker to pass it.
    @inlinable @inline(__always)
    public var hasPendingWills: Bool { !pendingWills.isEmpty }

    /// When the next will is due, on the owner's monotonic clock, or nil when none is pending.
    public var nextWillDeadline: UInt64? {
        pendingWills.nextDeadline
    }

    /// Posts every will whose grace period has passed, as its connection's sender.
    ///
    /// - Parameters:
    ///   - monotonicNow: The owner's monotonic clock, nanoseconds.
    ///   - realtimeNow: Nanoseconds since 1970, to stamp the posts.
    /// - Returns: How many wills were posted.
    @discardableResult
    public mutating func postDueWills(monotonicNow: UInt64, realtimeNow: UInt64) -> Int {
        var posted = 0
        while let pending = pendingWills.popFirst(dueBy: monotonicNow) {
            guard willIsDue(pending) else { continue }
            posted += 1
            let will = pending.will
            charge(will, -1)
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
        return posted
    }
}
