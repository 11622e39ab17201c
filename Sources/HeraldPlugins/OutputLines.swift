/// A plugin's stdout and stderr on their way into heraldd's log: split into lines, each bounded, and rate-limited so
/// a plugin that prints a flood costs the daemon a constant amount of work and memory.
///
/// Lines are let through by a token bucket, ``burst`` at once and ``linesPerSecond`` after that; the lines it holds
/// back are dropped and counted, and the count is reported as soon as a line is let through again (or by
/// ``flush(now:)``), so the log says exactly how many were lost. A line longer than ``maximumLineBytes`` is cut there,
/// marked with "…", and the rest of it discarded. Invalid UTF-8 is repaired, since the log is text.
public struct OutputLines: Sendable {
    /// What to write to the log.
    public enum Event: Hashable, Sendable {
        /// One line of the plugin's output, without its newline.
        case line(String)
        /// This many lines were dropped since the last event.
        case dropped(Int)
    }

    /// The longest line kept, in bytes.
    public static let maximumLineBytes = 2048
    /// Lines let through at once, after a quiet spell.
    public let burst: Int
    /// Lines let through per second, over time.
    public let linesPerSecond: Int

    private var partial: [UInt8] = []
    /// Whether the line being read has passed ``maximumLineBytes`` and is being discarded to its end.
    private var discarding = false
    private var tokens: Int
    private var refilledAt: Instant?
    private var dropped = 0

    /// Creates a splitter with a full bucket.
    public init(burst: Int = 200, linesPerSecond: Int = 100) {
        precondition(burst > 0 && linesPerSecond > 0, "a rate limit needs a positive burst and rate")
        self.burst = burst
        self.linesPerSecond = linesPerSecond
        tokens = burst
    }

    /// Takes the next bytes the plugin wrote.
    ///
    /// - Returns: the lines to log, and drop counts where lines were held back.
    public mutating func feed(_ bytes: some Sequence<UInt8>, now: Instant) -> [Event] {
        refill(now: now)
        var events: [Event] = []
        for byte in bytes {
            if byte == UInt8(ascii: "\n") {
                if discarding {
                    discarding = false
                } else {
                    emit(String(decoding: partial, as: UTF8.self), into: &events)
                }
                partial.removeAll(keepingCapacity: true)
            } else if !discarding {
                partial.append(byte)
                if partial.count > Self.maximumLineBytes {
                    partial.removeLast(partial.count - Self.maximumLineBytes)
                    emit(String(decoding: partial, as: UTF8.self) + "…", into: &events)
                    partial.removeAll(keepingCapacity: true)
                    discarding = true
                }
            }
        }
        return events
    }

    /// The plugin's output ended: the last unterminated line, and any count still owed.
    public mutating func finish(now: Instant) -> [Event] {
        refill(now: now)
        var events: [Event] = []
        if !partial.isEmpty && !discarding {
            emit(String(decoding: partial, as: UTF8.self), into: &events)
        }
        partial.removeAll()
        discarding = false
        if dropped > 0 {
            events.append(.dropped(dropped))
            dropped = 0
        }
        return events
    }

    /// The count owed, once the bucket has tokens again: called from the daemon's timer so a flood that stops
    /// still gets its count logged.
    public mutating func flush(now: Instant) -> [Event] {
        refill(now: now)
        guard dropped > 0, tokens > 0 else { return [] }
        defer { dropped = 0 }
        return [.dropped(dropped)]
    }

    /// Whether lines are being dropped and a count is owed.
    public var owesCount: Bool { dropped > 0 }

    private mutating func emit(_ line: String, into events: inout [Event]) {
        guard tokens > 0 else {
            dropped += 1
            return
        }
        tokens -= 1
        if dropped > 0 {
            events.append(.dropped(dropped))
            dropped = 0
        }
        events.append(.line(line))
    }

    private mutating func refill(now: Instant) {
        guard let last = refilledAt else {
            refilledAt = now
            return
        }
        guard now > last else { return }
        // An hour earns more than any burst; the cap keeps the product below UInt64's range.
        let elapsed = min(now.nanoseconds - last.nanoseconds, 3_600_000_000_000)
        let earned = elapsed * UInt64(linesPerSecond) / 1_000_000_000
        guard earned > 0 else { return }
        tokens = min(burst, tokens + Int(earned))
        // Advance by the time the earned tokens took, so fractions of a token are not lost between calls.
        refilledAt =
            tokens == burst
            ? now : Instant(nanoseconds: last.nanoseconds + earned * 1_000_000_000 / UInt64(linesPerSecond))
    }
}
