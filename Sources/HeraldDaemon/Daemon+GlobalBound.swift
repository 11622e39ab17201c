import HeraldBroker
import HeraldPosix

/// What relieving the global bound did since it was last logged: under a flood it can happen every turn, and one
/// warning per turn would flood the journal in turn.
struct GlobalBoundLog {
    /// At most one line per this many nanoseconds.
    static let interval: UInt64 = 1_000_000_000

    var reliefs = 0
    var dropped = 0
    var disconnected = 0
    var loggedAt: UInt64?
}

extension Daemon {
    /// The output queued for all connections passed `--max-queued-bytes`, and the broker shed it from the connections
    /// that hold it (by their overflow policy, or a disconnect; ``BrokerAction/shedOutput(dropped:disconnected:)``):
    /// log it, at most once a second. Every connection goes on being read.
    mutating func noteShedOutput(dropped: Int, disconnected: Int) {
        reliefLog.reliefs += 1
        reliefLog.dropped += dropped
        reliefLog.disconnected += disconnected
        let now = SystemClock.monotonicNanoseconds()
        if let last = reliefLog.loggedAt, now - last < GlobalBoundLog.interval { return }
        logger.warning(
            "queued output passed \(options.bounds.maxQueuedBytes) bytes \(reliefLog.reliefs) time"
                + "\(reliefLog.reliefs == 1 ? "" : "s") since the last report: dropped \(reliefLog.dropped) "
                + "notifications of the connections holding the most and disconnected \(reliefLog.disconnected); "
                + "now \(broker.accounting.bytes) bytes"
        )
        reliefLog = GlobalBoundLog(loggedAt: now)
    }
}
