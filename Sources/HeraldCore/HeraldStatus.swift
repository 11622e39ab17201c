import HeraldPosix
#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// The daemon's counters, from a `STATUS_REPORT` (see ``Herald/status()``).
public struct HeraldStatus: Sendable, Hashable {
    /// The daemon's process id.
    public let pid: Int32
    /// When the daemon started.
    public let startTime: Date
    /// When the daemon started, in nanoseconds since 1970-01-01T00:00:00Z.
    public let startTimeNanoseconds: UInt64
    /// How long the daemon has been running, computed from the wall clock now.
    public var uptime: Duration {
        let now = SystemClock.realtimeNanoseconds()
        guard now > startTimeNanoseconds else { return .zero }
        return .nanoseconds(Int64(clamping: now - startTimeNanoseconds))
    }
    /// Connections open now, this one included.
    public let connections: Int
    /// Subscriptions live now, over all connections.
    public let subscriptions: Int
    /// Names with a retained value.
    public let retained: Int
    /// Posts accepted since the daemon started.
    public let posted: UInt64
    /// `NOTIFY` frames written to connections since the daemon started.
    public let delivered: UInt64
    /// Live `NOTIFY` frames dropped from full connection queues since the daemon started.
    public let dropped: UInt64

    /// Creates a status; the fields are those of `STATUS_REPORT` in Protocols/wire.md.
    public init(
        pid: Int32,
        startTimeNanoseconds: UInt64,
        connections: Int,
        subscriptions: Int,
        retained: Int,
        posted: UInt64,
        delivered: UInt64,
        dropped: UInt64
    ) {
        self.pid = pid
        self.startTime = Date(timeIntervalSince1970: Double(startTimeNanoseconds) / 1_000_000_000)
        self.startTimeNanoseconds = startTimeNanoseconds
        self.connections = connections
        self.subscriptions = subscriptions
        self.retained = retained
        self.posted = posted
        self.delivered = delivered
        self.dropped = dropped
    }
}
