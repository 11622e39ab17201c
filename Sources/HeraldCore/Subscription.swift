import HeraldPosix
import HeraldWire
import Synchronization

/// How many notifications a stream's consumer has taken, counted by its iterator, so the reader knows how full the
/// stream's buffer is: `AsyncStream` does not say.
final class ConsumptionCounter: Sendable {
    let taken = Atomic<Int>(0)
    /// While an overflow episode is pending: the count at which the buffer is down to half, when the consumer must
    /// tell the connection to put the episode's notice in (nothing else may arrive to do it). `Int.max` otherwise.
    let drainedAt = Atomic<Int>(.max)
    /// What the consumer calls when it reaches `drainedAt`; set by the connection that owns the subscription.
    let onDrained = Mutex<(@Sendable () -> Void)?>(nil)

    /// Counts notifications taken by the consumer, and reports the end of an overflow episode.
    func took(_ number: Int = 1) {
        let count = taken.add(number, ordering: .relaxed).newValue
        if count >= drainedAt.load(ordering: .acquiring) {
            drainedAt.store(.max, ordering: .releasing)
            onDrained.withLock { $0 }?()
        }
    }
}

/// One subscription of a connection, as the reader routes to it: its patterns, its stream, and its loss accounting.
///
/// A stream may follow several patterns (`Herald.notifications(matching:)` with an array): each is a `SUBSCRIBE` of
/// its own on the wire, written in order, and the stream gets every post matching any of them once, in the order the
/// daemon sent them. The daemon processes a connection's frames in order, so the `ACK`s come in the order of the
/// patterns, and the patterns live at any moment are always the first ``livePatterns``.
struct Subscription: Sendable {
    /// The patterns, in the order their `SUBSCRIBE`s are written; never empty.
    let patterns: [Pattern]
    /// The first pattern, for matching the name bytes of frames the reader has not made strings of: kept inline,
    /// because nearly every stream has one pattern and the reader matches every live post against it.
    let matcher: PatternMatcher
    /// The other patterns' matchers, in order; usually empty.
    let laterMatchers: [PatternMatcher]
    /// Where notifications wait for the consumer.
    let continuation: NotificationBuffer
    let policy: BufferingPolicy
    /// What the daemon does when this connection cannot keep up.
    var overflow: OverflowPolicy = .dropOldest
    /// Whether the daemon is asked not to send this connection's own posts for it (version 2's `NO_LOCAL`).
    var excludesOwnPosts = false
    /// A `MONITOR` rather than a `SUBSCRIBE`.
    var isMonitor = false
    /// What the consumer has taken; with `enqueued`, how full the buffer is.
    var consumed = ConsumptionCounter()
    /// Notifications and notices the stream accepted.
    var enqueued = 0
    /// Set when a `bufferingOldest` buffer overflowed: notifications are counted as lost, not offered, until the
    /// consumer has drained it to half, so one notice covers the whole episode instead of one per free slot.
    var overflowing = false
    /// The wire ids of the patterns' `SUBSCRIBE`s on the current connection, in pattern order; empty until
    /// registered. The first is the stream's key in ``ConnectionState/subscriptions``.
    var ids: [UInt32] = []
    /// How many patterns, from the first, have their daemon's `ACK` read. Live posts are routed by those only: a post
    /// that arrives before a pattern's `ACK` was processed by the daemon before that subscription existed, and
    /// delivering it would be a duplicate of nothing the subscriber asked for (wire.md, "Local matching").
    var livePatterns = 0
    /// Losses not yet reported by a notice in the stream.
    var unreported: DropRange?
    /// Whether the reader put something in the stream during the batch it is routing, so it flushes this buffer,
    /// and only the buffers like it, once the batch is done.
    var touched = false
    /// Live notifications of the batch the reader is routing, not yet in the stream: they go in together, under one
    /// lock, when the reader commits them (``commitStaged(_:)``), always before anything else goes in.
    var staged: [HeraldNotification] = []

    /// Whether any pattern is live.
    var isLive: Bool { livePatterns > 0 }

    /// The patterns as the user wrote them, for messages.
    var description: String { patterns.map(\.text).joined(separator: ", ") }

    /// Whether a live notification may be staged rather than delivered: no loss waits for its notice and no
    /// overflow episode is on, so offered alone it would go straight in if there is room.
    var canStage: Bool { unreported == nil && !overflowing }

    init(
        patterns: [Pattern],
        continuation: NotificationBuffer,
        policy: BufferingPolicy,
        overflow: OverflowPolicy = .dropOldest,
        isMonitor: Bool = false,
        consumed: ConsumptionCounter = ConsumptionCounter()
    ) {
        precondition(!patterns.isEmpty, "a subscription needs a pattern")
        self.patterns = patterns
        self.matcher = PatternMatcher(patterns[0])
        self.laterMatchers = patterns.dropFirst().map(PatternMatcher.init)
        self.continuation = continuation
        self.policy = policy
        self.overflow = overflow
        self.isMonitor = isMonitor
        self.consumed = consumed
    }

    /// Whether a live post named `name` is this stream's: a live pattern matches it.
    @inline(__always)
    func matchesLive(_ name: UnsafeRawBufferPointer) -> Bool {
        oneOfFirst(livePatterns, matches: name)
    }

    /// Whether one of the first `count` patterns matches `name`.
    ///
    /// The later patterns are matched out of line: with their loop inlined, the reader's routing grew past what the
    /// optimizer inlines into the read loop, and a one-pattern stream, nearly every stream, paid for the call.
    @inline(__always)
    private func oneOfFirst(_ count: Int, matches name: UnsafeRawBufferPointer) -> Bool {
        count > 0 && (matcher.matches(name) || (count > 1 && oneOfLater(count - 1, matches: name)))
    }

    /// Whether one of the first `count` later patterns matches `name`, each matcher used where it lies in the array:
    /// `contains` on a slice copied each one into its closure, and so did one read through the array's buffer pointer,
    /// a retain and a release of its arrays per pattern per post (perf, herald-bench named, a stream of 10 names:
    /// 6.7 % of the samples).
    @inline(never)
    private func oneOfLater(_ count: Int, matches name: UnsafeRawBufferPointer) -> Bool {
        var index = 0
        while index < count {
            if laterMatchers[index].matches(name) { return true }
            index += 1
        }
        return false
    }

    /// Whether a retained value replayed for pattern `index` reached the stream already through an earlier pattern.
    ///
    /// The daemon processed the earlier pattern's `SUBSCRIBE` first. A retained value that a later pattern replays
    /// was then either already stored, and replayed for the earlier pattern too, or posted since, and delivered live
    /// through the earlier pattern, which was live by then. Either way the stream has it (or a notice for its loss),
    /// so the replayed copy is skipped: a name matching several patterns reaches the stream once.
    func earlierPatternMatches(_ name: UnsafeRawBufferPointer, before index: Int) -> Bool {
        oneOfFirst(index, matches: name)
    }

    /// Delivers `notification`, first reporting earlier losses if there are any.
    ///
    /// Keeps the promise that nothing is lost silently. With `bufferingOldest`, a notification is only put in the
    /// stream after the notice for the gap before it has been accepted, so the notice sits exactly at the gap. With
    /// `bufferingNewest` every notification goes in (evicting the oldest), and the owner reports the losses with
    /// ``reportDrops(_:)`` after each batch: a notice before each notification would itself evict one, and a full
    /// buffer would end up holding nothing but notices.
    mutating func deliver(_ notification: HeraldNotification, noticeSender: NoticeSender) {
        if case .bufferingOldest(let capacity) = policy {
            if overflowing {
                guard enqueued - consumed.taken.load(ordering: .relaxed) <= max(1, capacity) / 2 else {
                    record(lost: notification)
                    return
                }
                overflowing = false
            }
            if unreported != nil {
                reportDrops(noticeSender)
                if unreported != nil {
                    // The notice did not fit, so neither does this: count it with the gap it belongs to.
                    beginOverflow()
                    record(lost: notification)
                    return
                }
            }
        }
        switch continuation.yield(notification) {
        case .enqueued:
            enqueued += 1
        case .dropped(let lost):
            if case .bufferingOldest = policy { beginOverflow() } else { enqueued += 1 }
            record(lost: lost)
        default:
            break
        }
    }

    /// Puts the staged notifications in the stream: as many as there is room for in one step, then the rest one by
    /// one through ``deliver(_:noticeSender:)``, which drops and accounts for them exactly as if each had been offered
    /// alone.
    mutating func commitStaged(_ noticeSender: NoticeSender) {
        guard !staged.isEmpty else { return }
        var batch = staged
        staged = []
        let count = batch.count
        guard let accepted = continuation.yield(contentsOf: &batch) else { return }
        enqueued += accepted
        guard accepted < count else {
            // Usually the stream's empty spare array, swapped for the batch: staged in next, without an allocation.
            if batch.capacity <= NotificationBuffer.spareCapacity {
                batch.removeAll(keepingCapacity: true)
                staged = batch
            }
            return
        }
        for notification in batch[accepted...] {
            deliver(notification, noticeSender: noticeSender)
        }
    }

    /// Starts an overflow episode: from now until the consumer has drained the buffer to half, losses are counted.
    private mutating func beginOverflow() {
        overflowing = true
        if case .bufferingOldest(let capacity) = policy {
            consumed.drainedAt.store(enqueued - max(1, capacity) / 2, ordering: .releasing)
        }
    }

    /// Puts the reconnection notice in the stream, ahead of the retained values the new subscription replays.
    mutating func announceReconnection(_ noticeSender: NoticeSender) {
        reportDrops(noticeSender)
        switch continuation.yield(noticeSender.reconnectedNotice()) {
        case .enqueued: enqueued += 1
        case .dropped(let lost): record(lost: lost)
        default: break
        }
    }

    /// Adds losses the daemon reported (`DROPPED`) and tries to put the notice in the stream right away, where the
    /// gap is.
    mutating func daemonDropped(_ drops: DropRange, noticeSender: NoticeSender) {
        if unreported == nil {
            unreported = drops
        } else {
            unreported!.merge(drops)
        }
        reportDrops(noticeSender)
    }

    /// Puts a notice for the unreported losses in the stream, if there is room.
    mutating func reportDrops(_ noticeSender: NoticeSender) {
        guard let drops = unreported else { return }
        if overflowing, case .bufferingOldest(let capacity) = policy,
            enqueued - consumed.taken.load(ordering: .relaxed) > max(1, capacity) / 2
        {
            return
        }
        let notice = noticeSender.notice(for: drops)
        switch continuation.yield(notice) {
        case .enqueued:
            enqueued += 1
            overflowing = false
            consumed.drainedAt.store(.max, ordering: .releasing)
            unreported = nil
        case .terminated:
            unreported = nil
        case .dropped(let lost):
            switch policy {
            case .bufferingNewest:
                // The notice went in and pushed out the oldest element, a loss of its own for the next notice.
                unreported = nil
                record(lost: lost)
            case .bufferingOldest, .unbounded:
                // The notice itself was refused; the losses stay unreported until there is room.
                break
            }
        }
    }

    /// Counts `lost`; a lost notice's own count is carried over, so the total reported stays exact.
    private mutating func record(lost: HeraldNotification) {
        let drops: DropRange
        if case .dropped(let count, let first, let last) = lost.notice {
            drops = DropRange(count: count, firstSequence: first, lastSequence: last)
        } else {
            drops = DropRange(count: 1, firstSequence: lost.sequence, lastSequence: lost.sequence)
        }
        if unreported == nil {
            unreported = drops
        } else {
            unreported!.merge(drops)
        }
    }
}

/// Makes drop notices: they carry the daemon's pid and this process's uid and gid as their sender.
struct NoticeSender: Sendable {
    let sender: HeraldNotification.Sender

    /// A reconnection notice, stamped with the time it is put in the stream.
    func reconnectedNotice() -> HeraldNotification {
        HeraldNotification.reconnectedNotice(timeNanoseconds: SystemClock.realtimeNanoseconds(), sender: sender)
    }

    /// A notice for `drops`, stamped with the time it is put in the stream.
    func notice(for drops: DropRange) -> HeraldNotification {
        HeraldNotification.droppedNotice(drops, timeNanoseconds: SystemClock.realtimeNanoseconds(), sender: sender)
    }
}
