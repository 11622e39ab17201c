import HeraldWire

/// What a request is answered with.
enum Reply: Sendable {
    /// `ACK` of a `POST`, `SUBSCRIBE` or `PING`: the sequence number it carries.
    case sequence(UInt64)
    /// `ACK` of a `GET`, with the retained `NOTIFY` that came before it, if any.
    case value(HeraldNotification?)
    /// `STATUS_REPORT`.
    case status(HeraldStatus)
    /// Every `NAMES_REPORT` of one answer, with each name's subscriber count when `COUNTS` was asked and given.
    case names([String], counts: [UInt32]?)
}

typealias ReplyContinuation = CheckedContinuation<Result<Reply, HeraldError>, Never>

/// A request sent and not yet answered.
///
/// The entry exists from before the frame is written until its caller has the outcome, so an answer that the reader
/// reads before the caller has suspended is kept in `outcome`, never lost.
struct PendingRequest: Sendable {
    enum Kind: Sendable {
        /// Answered by `ACK`: `POST` with a request, `SUBSCRIBE`, `PING`.
        case acknowledgement
        /// Answered by an optional retained `NOTIFY`, then `ACK`.
        case get
        /// Answered by `STATUS_REPORT`.
        case status
        /// Answered by `NAMES_REPORT` frames, the last without `MORE`.
        case names
    }

    let kind: Kind
    /// The suspended caller, once it has suspended.
    var continuation: ReplyContinuation?
    /// The outcome, when it came before the caller suspended.
    var outcome: Result<Reply, HeraldError>?
    /// For a `GET`: the retained value read so far.
    var retained: HeraldNotification?
    /// For a `NAMES`: the names read so far.
    var names: [String] = []
    /// For a `NAMES` with `COUNTS`: the counts read so far, one per name; nil once a frame came without them.
    var counts: [UInt32]? = []
}

/// A caller to resume, with its outcome; resumed after the state's lock is released.
struct Resumption: Sendable {
    let continuation: ReplyContinuation
    let outcome: Result<Reply, HeraldError>

    func resume() {
        continuation.resume(returning: outcome)
    }
}

/// Where a `SUBSCRIBE` other than a stream's first belongs: the stream's key and the pattern's index in it.
struct PatternOfStream: Sendable {
    var stream: UInt32
    var index: Int
}

/// The mutable state of a connection, kept in the connection's `Mutex`. It does no I/O and resumes no continuation:
/// its methods return what the connection must do once the lock is released.
struct ConnectionState: Sendable {
    /// The streams, each under the wire id of its first pattern's `SUBSCRIBE`.
    var subscriptions: [UInt32: Subscription] = [:]
    /// The wire ids of the other patterns of streams with several: which stream, and which of its patterns.
    var laterPatterns: [UInt32: PatternOfStream] = [:]
    var pending: [UInt32: PendingRequest] = [:]
    /// Subscriptions the daemon holds or will hold once it reads what was written: counted from before `SUBSCRIBE`
    /// is written until after `UNSUBSCRIBE` is, so it is never below the daemon's own count.
    var subscriptionsOnTheWire = 0
    /// One counter for request and subscription ids, so the `request` of an `ACK` names exactly one of them.
    private var nextID: UInt32 = 1
    /// Why the connection ended; nil while it is open.
    var closedReason: HeraldError?
    /// Whether this process ended it (`close()`, release, an abandoned attempt), rather than the daemon.
    var closedLocally = false
    var readerEnded = false
    var readerWaiters: [CheckedContinuation<Void, Never>] = []
    /// Subscription ids whose `SUBSCRIBE` the daemon refused (version 2): it holds nothing to unsubscribe.
    var refusedSubscriptions: Set<UInt32> = []

    /// Takes the next unused id; ids are never 0, which wire.md reserves for "no reply".
    mutating func takeID() -> UInt32 {
        let id = nextID
        // The upper half of the ids is the quiet posts' (`Connection.quietPostID()`), so a refusal names one or the
        // other.
        nextID = nextID == Connection.firstQuietPostID - 1 ? 1 : nextID + 1
        return id
    }

    /// Registers a request about to be sent.
    ///
    /// - Returns: its id.
    /// - Throws: why the connection ended, if it has.
    mutating func addRequest(_ kind: PendingRequest.Kind) throws(HeraldError) -> UInt32 {
        if let closedReason { throw closedReason }
        let id = takeID()
        pending[id] = PendingRequest(kind: kind)
        return id
    }

    /// Gives the request its outcome: resumes the caller if it has suspended, or keeps the outcome for it. The first
    /// outcome wins; a late answer after a timeout is ignored.
    mutating func complete(_ id: UInt32, _ outcome: Result<Reply, HeraldError>) -> Resumption? {
        guard var entry = pending[id] else { return nil }
        if let continuation = entry.continuation {
            pending[id] = nil
            return Resumption(continuation: continuation, outcome: outcome)
        }
        if entry.outcome == nil {
            entry.outcome = outcome
            pending[id] = entry
        }
        return nil
    }

    /// Records the suspended caller of request `id`.
    ///
    /// - Returns: the outcome to resume it with right away, if it came first.
    mutating func install(_ continuation: ReplyContinuation, for id: UInt32) -> Result<Reply, HeraldError>? {
        guard var entry = pending[id] else {
            preconditionFailure("request \(id) was withdrawn before its caller waited for it")
        }
        if let outcome = entry.outcome {
            pending[id] = nil
            return outcome
        }
        entry.continuation = continuation
        pending[id] = entry
        return nil
    }

    /// Ends the connection: fails every request and takes every subscription out, for the connection to finish or
    /// hand over to a new connection.
    ///
    /// - Returns: nil if the connection had already ended.
    mutating func close(_ reason: HeraldError) -> (subscriptions: [Subscription], resumptions: [Resumption])? {
        guard closedReason == nil else { return nil }
        closedReason = reason
        let ended = Array(subscriptions.values)
        subscriptions = [:]
        laterPatterns = [:]
        var resumptions: [Resumption] = []
        for id in Array(pending.keys) {
            if let resumption = complete(id, .failure(reason)) {
                resumptions.append(resumption)
            }
        }
        return (ended, resumptions)
    }
}

extension ConnectionState {
    /// The daemon acknowledged `SUBSCRIBE` `id`: its pattern, and every earlier one of its stream, is live.
    mutating func subscriptionAcknowledged(_ id: UInt32) {
        if subscriptions[id] != nil {
            subscriptions[id]!.livePatterns = max(subscriptions[id]!.livePatterns, 1)
        } else if let place = laterPatterns[id], subscriptions[place.stream] != nil {
            subscriptions[place.stream]!.livePatterns = max(subscriptions[place.stream]!.livePatterns, place.index + 1)
        }
    }

    /// Takes stream `key` out, with its later patterns' ids.
    /// Whether `id` is the id of a pattern of a subscription (its first or a later one).
    func isSubscriptionID(_ id: UInt32) -> Bool {
        subscriptions[id] != nil || laterPatterns[id] != nil
    }

    mutating func removeSubscription(_ key: UInt32) -> Subscription? {
        guard let removed = subscriptions.removeValue(forKey: key) else { return nil }
        for id in removed.ids.dropFirst() {
            laterPatterns[id] = nil
        }
        return removed
    }
}
