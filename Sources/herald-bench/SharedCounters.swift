import Synchronization

/// The counters the harness keeps in shared memory between its processes. Here publishers and subscribers are
/// tasks of one process, so the same counters are atomics; nothing about them goes through the broker.
final class SharedCounters: Sendable {
    /// Deliveries owed for every data message sent so far (the sum of each message's subscriber count).
    let expected = Atomic<UInt64>(0)
    /// Deliveries received so far, over every subscription.
    let delivered = Atomic<UInt64>(0)
    /// Publishers that have finished sending.
    let publishersDone = Atomic<Int>(0)
    /// Set when a publisher saw no delivery for 2 s while waiting for the window.
    let stalled = Atomic<Bool>(false)
    /// Set when something failed; every loop stops.
    let aborted = Atomic<Bool>(false)

    /// Deliveries owed and not yet received: what the window bounds.
    var outstanding: Int64 {
        Int64(bitPattern: expected.load(ordering: .acquiring) &- delivered.load(ordering: .acquiring))
    }
}

/// What one subscription's consumer saw: the harness's per-connection counters, kept per stream and added up per
/// connection at the end, so the consumers share nothing but `SharedCounters.delivered`.
struct StreamTally: Sendable {
    var received: UInt64 = 0
    var misrouted: UInt64 = 0
    var malformed: UInt64 = 0
    /// Monotonic time of the last data delivery, 0 if none.
    var lastReceive: UInt64 = 0
    var latency = LatencyHistogram()
}

/// What one publisher did.
struct PublisherReport: Sendable {
    var sent: UInt64 = 0
    var firstSend: UInt64 = 0
    var lastSend: UInt64 = 0
    /// CPU nanoseconds spent in the publishing loop, summed over its stretches between suspensions.
    var cpuNanoseconds: UInt64 = 0
    var error: String?
}
