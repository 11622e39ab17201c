import Herald
import HeraldCommandLine

/// Subscribes to patterns on one connection and prints what arrives until a count, a deadline, a closed stdout or
/// the daemon going away ends it. `observe` and `wait` are both this, configured differently.
struct Observation: Sendable {
    /// What ended an observation.
    enum End: Sendable, Equatable {
        /// The printer printed `limit` notifications.
        case limitReached
        /// The timeout passed first.
        case timedOut
        /// Nobody reads stdout any more.
        case outputClosed
        /// The connection ended; the reason is the library's.
        case daemonWentAway(String)
    }

    /// The patterns, one subscription each, all in one stream.
    var patterns: [HeraldPattern]
    /// Human or JSON lines.
    var style: OutputStyle
    /// Stop after this many notifications; `nil` for no limit.
    var limit: Int?
    /// How long the whole run may take, connecting included; `nil` for no limit.
    var timeout: Duration?
    /// Whether to print `ready` on stderr once every subscription is acknowledged.
    var announcesReady: Bool
    /// Whether retained values are printed.
    var includesRetained: Bool
    /// The `--socket` value.
    var socket: String?
    /// `--overflow`: what heraldd does when this process reads too slowly.
    var overflow: Herald.OverflowPolicy = .dropOldest
    /// `--reconnect`: survive a daemon restart, printing a reconnected notice.
    var reconnects = false
    /// `--will ...`: what heraldd posts if this process dies without closing its connection.
    var will: Herald.Will?
    /// `monitor`: every post, read-only, instead of subscriptions to `patterns`.
    var monitors = false

    /// Runs the observation and turns how it ended into the command's outcome: `--count` reached, stdout closed
    /// or (without `--count`) `--timeout` passed is success; the timeout before `--count` is exit 124; heraldd
    /// going away is exit 69.
    ///
    /// - Parameter timeoutText: the `--timeout` value as typed, for the message.
    func runToCompletion(timeoutText: String?) async throws(CommandFailure) {
        let (end, printed) = try await run()
        switch end {
        case .limitReached, .outputClosed:
            return
        case .timedOut:
            // Without --count the timeout is how long to observe, so reaching it is the normal end.
            guard let limit, printed < limit else { return }
            throw .timedOut("timed out after \(timeoutText ?? "?") seconds with \(printed) of \(limit) notifications")
        case .daemonWentAway(let reason):
            throw CommandFailure(status: .unavailable, message: "heraldd went away: \(reason)")
        }
    }

    /// Runs the observation.
    ///
    /// - Returns: What ended it, and how many notifications were printed.
    /// - Throws: `CommandFailure` when the daemon can't be reached or refuses a subscription.
    func run() async throws(CommandFailure) -> (end: End, printed: Int) {
        let deadline = timeout.map { ContinuousClock.now + $0 }
        return try await Daemon.withConnection(socket: socket, reconnects: reconnects, will: will) {
            herald throws(CommandFailure) in
            let stream: HeraldNotifications
            do throws(HeraldError) {
                if monitors {
                    stream = try await herald.monitor()
                } else {
                    // One stream for every pattern: each post once, in the daemon's order. Returns once the daemon
                    // acknowledged them all: from here on no matching post is missed.
                    stream = try await herald.notifications(matching: patterns.map(\.text), overflow: overflow)
                }
            } catch {
                throw CommandFailure(error)
            }
            if announcesReady {
                Terminal.writeStderr("ready\n")
            }
            let printer = NotificationPrinter(style: style, limit: limit, includesRetained: includesRetained)
            let end = await race(stream, into: printer, on: herald, deadline: deadline)
            return (end, printer.printedCount)
        }
    }

    /// Consumes the stream against the deadline; the first to finish wins and the other is cancelled and awaited,
    /// so no task outlives the call.
    private func race(
        _ stream: HeraldNotifications,
        into printer: NotificationPrinter,
        on herald: Herald,
        deadline: ContinuousClock.Instant?
    ) async -> End {
        await withTaskGroup(of: End?.self) { group in
            group.addTask {
                for await notification in stream {
                    switch printer.handle(notification) {
                    case .continuing: continue
                    case .limitReached: return .limitReached
                    case .outputClosed: return .outputClosed
                    }
                }
                // The stream ends when the connection does, or when this task was cancelled because the deadline won.
                if Task.isCancelled {
                    return nil
                }
                return .daemonWentAway(herald.disconnectReason?.message ?? "the connection closed")
            }
            if let deadline {
                group.addTask {
                    // Not Task.sleep: its timer would start libdispatch's worker pool, which then wakes the
                    // process once a second (ThreadTimer).
                    guard await ThreadTimer.sleep(for: ContinuousClock.now.duration(to: deadline)) else { return nil }
                    return .timedOut
                }
            }

            var end: End?
            while end == nil, let next = await group.next() {
                end = next
            }
            group.cancelAll()
            // Closing ends the library's stream too, so its task finishes even if it is between two notifications
            // and not looking at cancellation.
            await herald.close()
            return end ?? .daemonWentAway("the connection closed")
        }
    }
}
