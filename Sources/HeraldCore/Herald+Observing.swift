import HeraldWire

/// Observing: streams of notifications, typed messages, retained values and the daemon's own answers.
extension Herald {
    /// Subscribes to the names matching `pattern`.
    ///
    /// Returns only after the daemon's `ACK`: after this returns, the subscription is live, and every post the daemon
    /// processes from then on (from any connection) is delivered. Retained values of matching names come first,
    /// flagged ``HeraldNotification/isRetained``, then live posts, with no gap and no duplicate between them.
    ///
    /// - Parameters:
    ///   - pattern: a pattern (Protocols/wire.md): `session.*`, `build.**`, `**`.
    ///   - bufferingPolicy: how many notifications wait for a slow consumer; bounded by default. Losses are
    ///     reported in the stream by a `herald.dropped` notice.
    ///   - overflow: what the daemon does when this connection cannot keep up: drop the oldest (the default),
    ///     keep the newest per name (`.coalesce`), or disconnect. The connection uses the strictest policy of its
    ///     subscriptions.
    /// - Returns: the notifications. Cancelling the consuming task, or dropping the sequence, unsubscribes.
    /// - Throws: ``HeraldError/Code/invalidPattern`` before anything is sent; ``HeraldError/Code/refused`` with the
    ///   wire code when a version 2 daemon refuses the subscription (`PATTERN_TOO_COMPLEX`, a lowered name limit:
    ///   the Herald and its other subscriptions go on); ``HeraldError/Code/timedOut``,
    ///   ``HeraldError/Code/cancelled`` (nothing stays subscribed), or why the connection ended.
    public func notifications(
        matching pattern: String,
        bufferingPolicy: BufferingPolicy = .default,
        overflow: OverflowPolicy = .dropOldest
    ) async throws(HeraldError) -> HeraldNotifications {
        try await notifications(matching: [pattern], bufferingPolicy: bufferingPolicy, overflow: overflow)
    }

    /// Subscribes to the names matching any of `patterns`, in one stream: every post once, in the order the daemon
    /// sent them.
    ///
    /// ```swift
    /// for await note in try await herald.notifications(matching: ["session.locked", "session.unlocked"]) {
    ///     away = note.name == "session.locked"  // the last one wins, as it happened
    /// }
    /// ```
    ///
    /// One loop over several names sees them in the order they were posted, which separate streams, each consumed by
    /// a task of its own, cannot promise: a lock and an unlock in quick succession could reach two loops in either
    /// order. A post whose name matches several of the patterns comes once.
    ///
    /// Each pattern is a subscription of the connection (it counts against ``maxSubscriptions``), acknowledged in
    /// turn; this returns once every one is live. Retained values come pattern by pattern, each pattern's before its
    /// live posts, so those of a later pattern may follow live posts that an earlier pattern already delivered; a
    /// retained value that an earlier pattern delivered is not delivered again. Everything else is as for
    /// the single-pattern form: one buffer, one loss accounting, one end.
    ///
    /// - Parameters:
    ///   - patterns: one or more patterns (Protocols/wire.md); a pattern given twice counts once.
    ///   - bufferingPolicy: how many notifications wait for a slow consumer; bounded by default.
    ///   - overflow: what the daemon does when this connection cannot keep up (see the single-pattern form).
    /// - Returns: the notifications. Cancelling the consuming task, or dropping the sequence, unsubscribes every
    ///   pattern.
    /// - Throws: ``HeraldError/Code/invalidPattern`` for an empty list or a bad pattern, and
    ///   ``HeraldError/Code/tooManySubscriptions`` when the patterns do not all fit, before anything is sent;
    ///   ``HeraldError/Code/timedOut``, ``HeraldError/Code/cancelled`` (nothing stays subscribed), or why the
    ///   connection ended.
    /// - Parameter excludingOwnPosts: ask a version 2 daemon not to send this Herald's own posts for these patterns
    ///   (`NO_LOCAL`), so that a client that posts what it also watches (a bridge importing what it exports) does not
    ///   fill its queue with its own posts. Another stream of this Herald that takes one of them may still bring it
    ///   here; a version 1 daemon sends them all.
    public func notifications(
        matching patterns: [String],
        bufferingPolicy: BufferingPolicy = .default,
        overflow: OverflowPolicy = .dropOldest,
        excludingOwnPosts: Bool = false
    ) async throws(HeraldError) -> HeraldNotifications {
        guard !patterns.isEmpty else {
            throw HeraldError(.invalidPattern, "no pattern to subscribe to: give at least one")
        }
        var parsed: [HeraldWire.Pattern] = []
        var seen: Set<String> = []
        for pattern in patterns where seen.insert(pattern).inserted {
            do {
                parsed.append(try HeraldWire.Pattern(pattern))
            } catch {
                throw HeraldError(.invalidPattern, error.reason)
            }
        }
        let (stream, consumed) = try await connection.subscribe(
            parsed,
            policy: bufferingPolicy,
            overflow: overflow.wire,
            excludingOwnPosts: excludingOwnPosts
        )
        return HeraldNotifications(buffer: stream, consumed: consumed, owner: self)
    }

    /// Monitors every post of the session, read-only (`MONITOR`): only the daemon's own user may, not even root.
    ///
    /// After this the connection may not post; use a separate ``Herald`` to post.
    /// - Throws: the daemon's `PERMISSION_DENIED` for another user: ``HeraldError/Code/refused`` from a version 2
    ///   daemon (the connection goes on), ``HeraldError/Code/daemonError`` from a version 1 daemon (the connection
    ///   ends); ``HeraldError/Code/timedOut``, or why the connection ended.
    public func monitor(bufferingPolicy: BufferingPolicy = .default) async throws(HeraldError) -> HeraldNotifications {
        let (stream, consumed) = try await connection.subscribe(
            [try! HeraldWire.Pattern("**")],
            policy: bufferingPolicy,
            monitor: true
        )
        return HeraldNotifications(buffer: stream, consumed: consumed, owner: self)
    }

    /// The names the daemon knows: those with a retained value or an exact subscription, sorted (`NAMES`).
    public func names() async throws(HeraldError) -> [String] {
        let reply = try await connection.request(.names, "NAMES") { id in .names(Frame.Names(request: id)) }
        guard case .names(let names, _) = reply else { preconditionFailure("NAMES answered with \(reply)") }
        return names
    }

    /// The names the daemon knows, as ``names()`` lists them, each with its subscriber count (`NAMES` with
    /// `COUNTS`).
    ///
    /// A name's count is the number of live subscriptions, on every connection (this one included), whose pattern
    /// matches it, exactly or by wildcard; a connection subscribed twice counts twice, and a ``monitor(bufferingPolicy:)``
    /// is not counted. The names and their counts are taken at one moment of the daemon's.
    ///
    /// - Parameter withSubscriberCounts: Whether to ask for the counts; without, every count is nil, as from
    ///   ``names()``.
    /// - Returns: The names in ``names()``'s order. The counts are nil when not asked for, or when the daemon speaks
    ///   only protocol version 1, which cannot count: then the names are still listed, so a caller can show them
    ///   and leave the counts blank.
    /// - Throws: As ``names()``.
    public func names(withSubscriberCounts: Bool) async throws(HeraldError) -> [HeraldName] {
        // One connection for both: after a reconnection the version could differ, and version 1 refuses `COUNTS`.
        let connection = self.connection
        let counting = withSubscriberCounts && connection.answersRefusals
        let reply = try await connection.request(.names, "NAMES") { id in
            .names(Frame.Names(request: id, counts: counting))
        }
        guard case .names(let names, let counts) = reply else { preconditionFailure("NAMES answered with \(reply)") }
        guard counting, let counts, counts.count == names.count else {
            return names.map { HeraldName(name: $0, subscribers: nil) }
        }
        return zip(names, counts).map { HeraldName(name: $0, subscribers: Int($1)) }
    }

    /// Subscribes to typed messages posted to `Message.name`; see ``notifications(matching:bufferingPolicy:)``.
    ///
    /// - Returns: the messages; payloads that do not decode as `Message` are skipped, and so are notices.
    /// - Throws: ``HeraldError/Code/invalidName`` when `Message.name` is not a name, and as
    ///   ``notifications(matching:bufferingPolicy:)``.
    public func messages<Message: HeraldMessage>(
        of type: Message.Type,
        bufferingPolicy: BufferingPolicy = .default
    ) async throws(HeraldError) -> HeraldMessages<Message> {
        try Self.validate(name: Message.name)
        let notifications = try await notifications(matching: Message.name, bufferingPolicy: bufferingPolicy)
        return HeraldMessages(notifications: notifications, logger: connection.options.logger)
    }

    /// Reads the retained value of `name` (`GET`).
    ///
    /// - Returns: the retained notification, flagged ``HeraldNotification/isRetained``, or nil when the name has none.
    /// - Throws: ``HeraldError/Code/invalidName`` before anything is sent; ``HeraldError/Code/refused`` with the
    ///   wire code when a version 2 daemon refuses it; ``HeraldError/Code/timedOut``,
    ///   ``HeraldError/Code/cancelled``, or why the connection ended.
    public func retainedValue(of name: String) async throws(HeraldError) -> HeraldNotification? {
        try Self.validate(name: name)
        let reply = try await connection.request(.get, "GET \(name)") { id in .get(Frame.Get(request: id, name: name)) }
        guard case .value(let notification) = reply else { preconditionFailure("GET answered with \(reply)") }
        return notification
    }

    /// Reads the daemon's counters (`STATUS`).
    ///
    /// - Throws: ``HeraldError/Code/timedOut``, ``HeraldError/Code/cancelled``, or why the connection ended.
    public func status() async throws(HeraldError) -> HeraldStatus {
        let reply = try await connection.request(.status, "STATUS") { id in .status(Frame.Status(request: id)) }
        guard case .status(let status) = reply else { preconditionFailure("STATUS answered with \(reply)") }
        return status
    }
}
