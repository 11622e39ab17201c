import Synchronization

/// A subscription's bounded buffer between the reader thread and the consuming task.
///
/// It has `AsyncStream`'s yield semantics (bounded, dropping the newest or the oldest, reporting what it
/// dropped), but hands notifications over in batches: `yield` only appends, the reader calls `flush` once per read
/// of the socket, and the consumer takes everything queued in one locked step and then iterates without locks. So a
/// burst costs one wake-up of the consumer, not one per notification, which is what a `for await` at a million
/// notifications a second needs.
final class NotificationBuffer: Sendable {
    /// What became of a notification offered to the buffer.
    enum YieldResult: Sendable {
        case enqueued
        /// The buffer was full: with `bufferingOldest` the offered one was dropped, with `bufferingNewest` the
        /// oldest queued one, which this carries.
        case dropped(HeraldNotification)
        /// The consumer is gone or the buffer was finished.
        case terminated
    }

    /// How the buffer ended, for ``onTermination``.
    enum Termination: Sendable {
        case finished
        case cancelled
    }

    /// The consumer waiting for notifications. Unchecked: a checked continuation allocates a canary object per wait,
    /// and a stream of a thousand-name subscriber waits once per notification (perf, herald-bench named: `malloc` and
    /// `free` 3 % of the process). Every path resumes it once: it is taken out of ``State`` under the lock before it is
    /// resumed.
    private typealias Waiter = UnsafeContinuation<[HeraldNotification]?, Never>

    private struct State {
        var items: [HeraldNotification] = []
        /// An empty array with room, handed back by the consumer once it has handed out a batch: it becomes the next
        /// `items`, so a batch's storage goes round (reader, stream, consumer, back) instead of being allocated and
        /// freed per batch. A stream that gets one notification per read (herald-bench named) made one array per
        /// notification, and the allocator's functions were 13 % of that run's samples.
        var spare: [HeraldNotification] = []
        var waiter: Waiter?
        var finished = false
        var terminated = false
        /// Why the buffer was finished, when its owner said.
        var endReason: HeraldError?
        var onTermination: (@Sendable (Termination) -> Void)?

        /// Keeps `used` (empty) as the spare array if there is none and it is small enough.
        mutating func keepSpare(_ used: inout [HeraldNotification]) {
            guard spare.capacity == 0, !terminated, used.capacity > 0, used.capacity <= NotificationBuffer.spareCapacity
            else { return }
            swap(&spare, &used)
        }

        /// Hands over what is queued, leaving the spare array (or an empty one) in its place.
        mutating func takeItems() -> [HeraldNotification] {
            var taken = spare
            spare = []
            swap(&taken, &items)
            return taken
        }
    }

    /// The most notifications a recycled array may have room for (`State.spare`, and a subscription's staging
    /// array): enough for the small batches of a stream fed one notification per read, where an allocation per
    /// batch shows, and little memory kept per stream (3.5 KiB). A larger batch pays for its allocation over many
    /// notifications.
    static let spareCapacity = 64

    /// How many notifications a buffer holds before those queued behind them may be compacted
    /// (``HeraldNotification/compacted()``): a consumer that keeps up takes each read's notifications as they are,
    /// pointing into the read; one that lags, or never reads, would otherwise keep a whole read (up to 64 KiB) per
    /// notification it has not taken. Past this many, a batch that holds less than half of the reads it points into
    /// is compacted, each notification keeping at most about twice its own bytes; so what a stream keeps is bounded by
    /// twice the bytes it actually holds, plus this many reads at most.
    static let sharedLimit = 64

    private let state = Mutex(State())
    private let policy: BufferingPolicy

    init(policy: BufferingPolicy) {
        self.policy = policy
    }

    /// Called once when the buffer is finished or its consumer goes away (cancelled, or the sequence released).
    var onTermination: (@Sendable (Termination) -> Void)? {
        get { state.withLock { $0.onTermination } }
        set { state.withLock { $0.onTermination = newValue } }
    }

    /// Replaces ``onTermination``, unless the buffer has already ended: a handler set on an ended buffer would
    /// never be called, and whatever it was to undo would stay done (a subscription nobody reads).
    ///
    /// - Returns: whether the handler was installed; false when the buffer had ended, and the caller undoes it now.
    func installTermination(_ handler: @escaping @Sendable (Termination) -> Void) -> Bool {
        state.withLock { state in
            guard !state.finished && !state.terminated else { return false }
            state.onTermination = handler
            return true
        }
    }

    /// Whether the buffer has ended: finished, or its consumer gone.
    var hasEnded: Bool {
        state.withLock { $0.finished || $0.terminated }
    }

    /// What the notifications queued for the consumer hold: their own bytes (name and payload), and the bytes they
    /// keep allocated, each buffer they share counted once.
    func queuedRetention() -> (own: Int, retained: Int) {
        state.withLock { state in
            var seen: Set<ObjectIdentifier> = []
            var own = 0
            var retained = 0
            for notification in state.items {
                own += notification.ownByteCount
                if seen.insert(ObjectIdentifier(notification.bytes)).inserted {
                    retained += notification.retainedByteCount
                }
            }
            return (own, retained)
        }
    }

    /// Why the buffer was finished, if its owner said: what ended the stream for its consumer.
    var endReason: HeraldError? {
        state.withLock { $0.endReason }
    }

    /// Queues `notification` for the consumer, without waking it: the caller ``flush()``es after its batch.
    @discardableResult
    func yield(_ notification: HeraldNotification) -> YieldResult {
        state.withLock { state in
            if state.finished || state.terminated { return .terminated }
            switch policy {
            case .bufferingOldest(let limit) where state.items.count >= max(1, limit):
                return .dropped(notification)
            case .bufferingNewest(let limit) where state.items.count >= max(1, limit):
                let oldest = state.items.removeFirst()
                state.items.append(state.items.count < Self.sharedLimit ? notification : notification.compacted())
                return .dropped(oldest)
            default:
                state.items.append(state.items.count < Self.sharedLimit ? notification : notification.compacted())
                return .enqueued
            }
        }
    }

    /// Queues as many of `batch` as there is room for, in one locked step, without waking the consumer.
    ///
    /// What one ``yield(_:)`` per notification would do while there is room; the caller offers the rest one by one,
    /// which drops and reports exactly as it always does.
    ///
    /// - Returns: how many of the first notifications of `batch` were queued (`batch` is left holding an unspecified
    ///   array then), or nil when the consumer is gone or the buffer was finished.
    func yield(contentsOf batch: inout [HeraldNotification]) -> Int? {
        state.withLock { state in
            if state.finished || state.terminated { return nil }
            let room =
                switch policy {
                case .bufferingOldest(let limit), .bufferingNewest(let limit): max(0, max(1, limit) - state.items.count)
                case .unbounded: Int.max
                }
            let accepted = min(room, batch.count)
            if accepted == batch.count && state.items.isEmpty {
                // The usual case when the consumer keeps up: the whole batch becomes the queue, no copy.
                swap(&state.items, &batch)
            } else if state.items.count + accepted <= Self.sharedLimit {
                state.items.append(contentsOf: batch[..<accepted])
            } else if Self.holdsHalfOfItsReads(batch[..<accepted]) {
                // A read of many notifications, most of them this stream's (herald-bench fan-out 100): what it keeps
                // is its own, within twice; a copy of each would cost a malloc per notification for nothing.
                state.items.append(contentsOf: batch[..<accepted])
            } else {
                for notification in batch[..<accepted] {
                    state.items.append(state.items.count < Self.sharedLimit ? notification : notification.compacted())
                }
            }
            return accepted
        }
    }

    /// Whether `batch`'s notifications hold at least half of the bytes they keep allocated, each read they point
    /// into counted once: kept as they are, they keep at most twice what they hold.
    private static func holdsHalfOfItsReads(_ batch: ArraySlice<HeraldNotification>) -> Bool {
        // A batch is one read's, or a few: a short list beats a set.
        var reads: [ObjectIdentifier] = []
        var kept = 0
        var own = 0
        for notification in batch {
            own += notification.ownByteCount
            let read = ObjectIdentifier(notification.bytes)
            if !reads.contains(read) {
                // Many reads in one batch is not what the reader makes: compacting them is the safe answer.
                guard reads.count < 8 else { return false }
                reads.append(read)
                kept += notification.retainedByteCount
            }
        }
        return 2 * own >= kept
    }

    /// Hands everything queued to the consumer if it is waiting; one resume for the whole batch.
    func flush() {
        let handoff = state.withLock {
            state -> (Waiter, [HeraldNotification])? in
            guard let waiter = state.waiter, !state.items.isEmpty else { return nil }
            state.waiter = nil
            return (waiter, state.takeItems())
        }
        if let (waiter, items) = handoff { waiter.resume(returning: items) }
    }

    /// No more notifications: the consumer gets what is queued, then the end.
    ///
    /// - Parameter reason: why, for ``endReason``.
    func finish(_ reason: HeraldError? = nil) {
        let (waiter, handler) = state.withLock {
            state -> (Waiter?, (@Sendable (Termination) -> Void)?) in
            guard !state.finished && !state.terminated else { return (nil, nil) }
            state.finished = true
            state.endReason = reason
            defer {
                state.waiter = nil
                state.onTermination = nil
            }
            return (state.items.isEmpty ? state.waiter : nil, state.onTermination)
        }
        waiter?.resume(returning: nil)
        handler?(.finished)
    }

    /// The consumer is gone: drop everything and tell the owner.
    func terminate() {
        let (waiter, handler) = state.withLock {
            state -> (Waiter?, (@Sendable (Termination) -> Void)?) in
            guard !state.terminated else { return (nil, nil) }
            state.terminated = true
            state.items = []
            state.spare = []
            defer {
                state.waiter = nil
                state.onTermination = nil
            }
            return (state.waiter, state.finished ? nil : state.onTermination)
        }
        waiter?.resume(returning: nil)
        handler?(.cancelled)
    }

    /// Takes everything queued, waiting for at least one notification; nil at the end or when cancelled.
    ///
    /// - Parameter used: the array the last take returned, handed out and empty now, kept for a later batch (see
    ///   `State.spare`); an array without room, or with more than ``spareCapacity``, is not kept.
    ///
    /// In the consumer's isolation: a hop to the generic executor on every call asked the runtime for the task's
    /// preferred executor under its status lock (perf, herald-bench named, where a consumer waits once per
    /// notification: `getPreferredTaskExecutor` 3.0 % -> 2.3 % and `withStatusRecordLock` 6.1 % -> 5.2 % without it).
    nonisolated(nonsending) func take(
        recycling used: consuming [HeraldNotification] = []
    ) async -> [HeraldNotification]? {
        if Task.isCancelled {
            terminate()
            return nil
        }
        // Moved, not copied: the array must stay uniquely referenced, or emptying it would allocate anew.
        var used = consume used
        used.removeAll(keepingCapacity: true)
        // What is waiting is taken without a cancellation handler or a continuation: under load the consumer finds
        // notifications waiting nearly every time, and installing both cost a task status lock and a continuation
        // per take (perf: withStatusRecordLock 5 % of herald-bench named).
        let waiting = state.withLock { state -> [HeraldNotification]?? in
            state.keepSpare(&used)
            if !state.items.isEmpty { return .some(state.takeItems()) }
            if state.finished || state.terminated { return .some(nil) }
            return nil
        }
        if let waiting { return waiting }
        return await withTaskCancellationHandler {
            await withUnsafeContinuation { (continuation: Waiter) in
                let now = state.withLock { state -> [HeraldNotification]?? in
                    if !state.items.isEmpty { return .some(state.takeItems()) }
                    if state.finished || state.terminated { return .some(nil) }
                    state.waiter = continuation
                    return nil
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            terminate()
        }
    }
}

/// Terminates a buffer when the last sequence or iterator over it is released, as `AsyncStream` does.
final class BufferLifetime: Sendable {
    let buffer: NotificationBuffer

    init(_ buffer: NotificationBuffer) {
        self.buffer = buffer
    }

    deinit {
        buffer.terminate()
    }
}
