import Dispatch
import Synchronization

/// The counters the harness keeps in shared memory between its processes. Here publishers and subscribers are
/// tasks of one process, so the same counters are atomics; nothing about them goes through the broker.
final class SharedCounters: Sendable {
    /// Deliveries owed for every data message sent so far (the sum of each message's subscriber count).
    let expected = Atomic<UInt64>(0)
    /// Deliveries received so far by each consumer (one per stream).
    ///
    /// One counter per consumer, each written by that consumer alone with a plain store, as bench.c's subscriber
    /// thread stores its own count: with one counter for every consumer, the 100 reader threads of fan-out 100
    /// contended for its cache line, and perf put 14 % of the process's samples on that one add; with one per
    /// connection, its locked add was still 5 %. The harness's cost, not the library's.
    let deliveredBy: [DeliveryCounter]
    /// Publishers that have finished sending.
    let publishersDone = Atomic<Int>(0)
    /// Set when a publisher saw no delivery for 2 s while waiting for the window.
    let stalled = Atomic<Bool>(false)
    /// Set when something failed; every loop stops.
    let aborted = Atomic<Bool>(false)

    /// With `--window-wait block`, one per publisher: where it sleeps until the window has room; empty otherwise.
    let windowWaits: [WindowWait]

    init(consumers: Int, blockingPublishers: Int = 0) {
        deliveredBy = (0..<max(1, consumers)).map { _ in DeliveryCounter() }
        windowWaits = (0..<blockingPublishers).map { _ in WindowWait() }
    }

    /// Called by a consumer after it counted a delivery: wakes each blocked publisher whose window now has room.
    /// Nothing at all under `--window-wait sleep` (no publisher blocks).
    func deliveryCounted() {
        guard !windowWaits.isEmpty else { return }
        // The count's store before the targets' loads (the publisher stores its target before it loads the
        // count): one of the two sees the other, so no wake-up is lost.
        atomicMemoryFence(ordering: .sequentiallyConsistent)
        for wait in windowWaits { wait.wakeIfReached(self) }
    }

    /// Deliveries received so far, over every subscription.
    var delivered: UInt64 {
        var sum: UInt64 = 0
        for counter in deliveredBy { sum &+= counter.count.load(ordering: .acquiring) }
        return sum
    }

    /// Deliveries owed and not yet received: what the window bounds.
    var outstanding: Int64 {
        let expected = expected.load(ordering: .acquiring)
        return Int64(bitPattern: expected &- delivered)
    }

    /// Whether more than `limit` deliveries are outstanding, as ``outstanding`` `> limit` says, summing the
    /// consumers' counters only when `known` (a count of deliveries read earlier, which only grow) cannot settle it.
    func isOutstanding(moreThan limit: Int64, known: inout UInt64) -> Bool {
        let expected = expected.load(ordering: .acquiring)
        if Int64(bitPattern: expected &- known) <= limit { return false }
        known = delivered
        return Int64(bitPattern: expected &- known) > limit
    }
}

/// One consumer's deliveries, on a cache line of its own.
final class DeliveryCounter: Sendable {
    let count = Atomic<UInt64>(0)
    /// Keeps the next counter off this one's cache line.
    private let padding: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0, 0)

    /// Counts one delivery. Only the counter's one consumer calls it, so a load and a store do (a plain store on
    /// x86), not a locked add.
    func add() {
        count.store(count.load(ordering: .relaxed) &+ 1, ordering: .releasing)
    }
}

/// What one subscription's consumer saw: the harness's per-connection counters, kept per stream and added up per
/// connection at the end, so a consumer shares nothing but its connection's ``ConnectionLatency`` (its
/// ``DeliveryCounter`` is its own; the publishers only read it).
struct StreamTally: Sendable {
    var received: UInt64 = 0
    var misrouted: UInt64 = 0
    var malformed: UInt64 = 0
    /// Monotonic time of the last data delivery, 0 if none.
    var lastReceive: UInt64 = 0
}

/// The latencies of one subscriber connection's deliveries, recorded by all of its consumers.
///
/// One histogram per connection, not per stream: bench.c's subscriber keeps one for all its connections, and a
/// histogram is 30 KB. With one per stream, named's 1,000 streams spread their recordings over 30 MB, and perf put
/// 72 % of the consumer's own samples on the one increment that missed the cache. A connection's consumers run on
/// its reader thread, so the lock is uncontended there.
final class ConnectionLatency: Sendable {
    let histogram = Mutex(LatencyHistogram())

    /// Records `latencies`, in nanoseconds.
    func record(_ latencies: UnsafeBufferPointer<UInt64>) {
        histogram.withLock { histogram in
            for nanoseconds in latencies { histogram.record(nanoseconds) }
        }
    }
}

/// A consumer's latencies not yet in its connection's histogram: taking the lock per delivery cost two atomic
/// operations each (perf: the lock was most of the consumer's own time at fan-out 100), where bench.c adds to its one
/// histogram with a plain increment.
struct LatencyBatch {
    private var pending: [UInt64] = []

    init() {
        pending.reserveCapacity(Self.capacity)
    }

    private static let capacity = 64

    /// Records one latency, adding the batch to `latency` once it is full.
    mutating func record(_ nanoseconds: UInt64, into latency: ConnectionLatency) {
        pending.append(nanoseconds)
        if pending.count == Self.capacity { flush(into: latency) }
    }

    /// Adds what is pending to `latency`.
    mutating func flush(into latency: ConnectionLatency) {
        pending.withUnsafeBufferPointer { latency.record($0) }
        pending.removeAll(keepingCapacity: true)
    }
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

/// `--window-wait block`: a publisher whose window is full sleeps on a semaphore until the consumers have received
/// the deliveries it waits for, as mosquitto_pub waits in poll(2) for its PUBACKs, instead of waking every 20 µs to
/// look (bench.c's way, the default). On a window-bound path sharing two cores with the processes it measures, the
/// sleeps' wake-ups took over half of herald-bench's CPU (perf: 58 % of its samples in the scheduler under
/// nanosleep), CPU the measured path then lacked.
final class WindowWait: Sendable {
    /// The count of deliveries the publisher waits for; 0 while it does not wait.
    private let target = Atomic<UInt64>(0)
    private let opened = DispatchSemaphore(value: 0)

    /// Wakes the publisher if its target is reached; the consumer that clears the target signals, once.
    func wakeIfReached(_ counters: SharedCounters) {
        let target = target.load(ordering: .sequentiallyConsistent)
        guard target != 0, counters.delivered >= target else { return }
        if self.target.compareExchange(expected: target, desired: 0, ordering: .sequentiallyConsistent).exchanged {
            opened.signal()
        }
    }

    /// Blocks the calling thread until `counters.delivered` reaches `deliveries`, or for at most `timeout`.
    ///
    /// - Returns: whether the deliveries came; false after the timeout.
    func wait(until deliveries: UInt64, _ counters: SharedCounters, timeout: DispatchTimeInterval) -> Bool {
        target.store(deliveries, ordering: .sequentiallyConsistent)
        if counters.delivered >= deliveries {
            // Come already; unless a consumer cleared the target first, and signals: then that signal is taken.
            if target.compareExchange(expected: deliveries, desired: 0, ordering: .sequentiallyConsistent).exchanged {
                return true
            }
            opened.wait()
            return true
        }
        if opened.wait(timeout: .now() + timeout) == .success { return true }
        if target.compareExchange(expected: deliveries, desired: 0, ordering: .sequentiallyConsistent).exchanged {
            return false
        }
        opened.wait()
        return true
    }
}
