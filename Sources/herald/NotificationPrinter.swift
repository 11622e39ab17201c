import Herald
import HeraldCommandLine
import Synchronization

/// Prints the notifications of one or more subscriptions as a single stream: each post once, up to a count.
///
/// `observe` subscribes once per pattern on one connection, and the library delivers a post to every subscription
/// whose pattern matches it, so a post matching two patterns arrives twice, once per stream. Each stream is consumed
/// by its own task, and they all call `handle(_:)`, which decides under one lock whether to print, so lines never
/// interleave and the count is exact.
///
/// Each stream is in sequence order. Across patterns, lines come in the order the tasks reach the printer, which is
/// sequence order too unless posts matching different patterns arrive within moments of each other: the streams
/// carry no marker that would tell a task that another stream has nothing older waiting.
final class NotificationPrinter: Sendable {
    /// What the caller should do after handing over a notification.
    enum Verdict: Sendable, Equatable {
        /// Keep consuming.
        case continuing
        /// The `--count` limit is reached; stop.
        case limitReached
        /// Nobody reads stdout any more (EPIPE); stop.
        case outputClosed
    }

    /// Identifies one DROPPED notice, which the library may put in every subscription's stream.
    private struct Drop: Hashable {
        var count: UInt64
        var firstSequence: UInt64
        var lastSequence: UInt64
    }

    private struct State {
        /// Notifications printed so far; notices don't count.
        var printed = 0
        /// Set once the printer has stopped; every later call returns it without printing.
        var finished: Verdict?
        /// For posts printed already: how many more deliveries of the same sequence number are still to come.
        var duplicatesToCome: [UInt64: Int] = [:]
        /// The most recent drop notices printed, to print each once however many streams carry it.
        var recentDrops: [Drop] = []
        /// Reconnection notices still to come from the other streams for the reconnection just printed.
        var reconnectionCopiesToCome = 0
    }

    /// How many recent drop notices to remember; copies of one notice arrive close together.
    private static let recentDropsKept = 64

    private let patterns: [HeraldPattern]
    private let style: OutputStyle
    private let limit: Int?
    private let includesRetained: Bool
    private let state = Mutex(State())

    /// Creates a printer for the subscriptions to `patterns`.
    ///
    /// - Parameters:
    ///   - patterns: The patterns subscribed to, one stream each; used to know how many copies of a post will come.
    ///   - style: Human or JSON lines.
    ///   - limit: Stop after printing this many notifications; `nil` for no limit.
    ///   - includesRetained: Whether retained values are printed; `wait` skips them to wait for a live post.
    init(patterns: [HeraldPattern], style: OutputStyle, limit: Int?, includesRetained: Bool) {
        self.patterns = patterns
        self.style = style
        self.limit = limit
        self.includesRetained = includesRetained
    }

    /// The number of notifications printed so far.
    var printedCount: Int {
        state.withLock { $0.printed }
    }

    /// Prints `notification` unless it was printed already, is skipped, or the printer has stopped.
    ///
    /// - Returns: Whether the caller should keep consuming.
    func handle(_ notification: HeraldNotification) -> Verdict {
        state.withLock { (state) -> Verdict in
            if let finished = state.finished {
                return finished
            }
            let line: String
            if case .dropped(let count, let first, let last) = notification.notice {
                let drop = Drop(count: count, firstSequence: first, lastSequence: last)
                guard !state.recentDrops.contains(drop) else { return .continuing }
                state.recentDrops.append(drop)
                if state.recentDrops.count > Self.recentDropsKept {
                    state.recentDrops.removeFirst()
                }
                line = OutputFormat.droppedLine(count: count, firstSequence: first, lastSequence: last, style: style)
            } else if case .reconnected = notification.notice {
                // Every stream carries one; print the first of each reconnection.
                if state.reconnectionCopiesToCome > 0 {
                    state.reconnectionCopiesToCome -= 1
                    return .continuing
                }
                state.reconnectionCopiesToCome = patterns.count - 1
                state.duplicatesToCome = [:]
                line = OutputFormat.reconnectedLine(style: style)
            } else {
                guard includesRetained || !notification.isRetained else { return .continuing }
                guard isFirstDelivery(of: notification, state: &state) else { return .continuing }
                line = OutputFormat.line(for: notification, style: style)
            }

            guard Terminal.writeStdout(line) else {
                state.finished = .outputClosed
                return .outputClosed
            }
            if notification.notice == nil {
                state.printed += 1
                if let limit, state.printed >= limit {
                    state.finished = .limitReached
                }
            }
            return state.finished ?? .continuing
        }
    }

    /// Whether this is the first copy of a post to arrive, counting the copies still to come.
    ///
    /// A post is identified by its sequence number, whether it arrives live or as a retained value (a retained value
    /// carries the sequence number of the post that stored it). Each subscription whose pattern matches the name
    /// delivers one copy, live or retained, so the copies to expect are the number of matching patterns; the entry is
    /// removed when the last one arrives, which keeps the table as small as the posts in flight.
    private func isFirstDelivery(of notification: HeraldNotification, state: inout State) -> Bool {
        guard patterns.count > 1 else { return true }
        if let toCome = state.duplicatesToCome[notification.sequence] {
            state.duplicatesToCome[notification.sequence] = toCome > 1 ? toCome - 1 : nil
            return false
        }
        let copies = patterns.count(where: { $0.matches(notification.name) })
        if copies > 1 {
            state.duplicatesToCome[notification.sequence] = copies - 1
        }
        return true
    }
}
