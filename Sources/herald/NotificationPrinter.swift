import Herald
import HeraldCommandLine
import Synchronization

/// Prints the notifications of one stream, up to a count.
///
/// `observe` follows all its patterns in one stream (or monitors), so each post arrives once and in the daemon's
/// order. The stream's task and the deadline both reach the printer, which decides under one lock whether to print, so
/// the count is exact and nothing is printed once it has stopped.
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

    private struct State {
        /// Notifications printed so far; notices don't count.
        var printed = 0
        /// Set once the printer has stopped; every later call returns it without printing.
        var finished: Verdict?
    }

    private let style: OutputStyle
    private let limit: Int?
    private let includesRetained: Bool
    private let state = Mutex(State())

    /// Creates a printer.
    ///
    /// - Parameters:
    ///   - style: Human or JSON lines.
    ///   - limit: Stop after printing this many notifications; `nil` for no limit.
    ///   - includesRetained: Whether retained values are printed; `wait` skips them to wait for a live post.
    init(style: OutputStyle, limit: Int?, includesRetained: Bool) {
        self.style = style
        self.limit = limit
        self.includesRetained = includesRetained
    }

    /// The number of notifications printed so far.
    var printedCount: Int {
        state.withLock { $0.printed }
    }

    /// Prints `notification` unless it is skipped (a retained value, for `wait`) or the printer has stopped.
    ///
    /// - Returns: Whether the caller should keep consuming.
    func handle(_ notification: HeraldNotification) -> Verdict {
        state.withLock { (state) -> Verdict in
            if let finished = state.finished {
                return finished
            }
            let line: String
            switch notification.notice {
            case .dropped(let count, let first, let last):
                line = OutputFormat.droppedLine(count: count, firstSequence: first, lastSequence: last, style: style)
            case .reconnected:
                line = OutputFormat.reconnectedLine(style: style)
            case nil:
                guard includesRetained || !notification.isRetained else { return .continuing }
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
}
