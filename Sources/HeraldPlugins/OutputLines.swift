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
        let array = Array(bytes)
        return array.withUnsafeBytes { feed($0, now: now) }
    }

    /// Takes the next bytes the plugin wrote, straight from the read buffer.
    ///
    /// The work is a word-at-a-time search for each newline plus a constant per line: bytes inside a line are
    /// copied at most once (and not at all past ``maximumLineBytes``), and a line the rate limit drops is counted
    /// without being made into text.
    ///
    /// - Returns: the lines to log, and drop counts where lines were held back.
    public mutating func feed(_ bytes: UnsafeRawBufferPointer, now: Instant) -> [Event] {
        refill(now: now)
        var events: [Event] = []
        var start = 0
        while start < bytes.count {
            guard let newline = Self.firstNewline(in: bytes, from: start) else {
                take(UnsafeRawBufferPointer(rebasing: bytes[start...]), into: &events)
                break
            }
            if discarding {
                discarding = false
            } else if partial.isEmpty && newline - start <= Self.maximumLineBytes {
                emit(UnsafeRawBufferPointer(rebasing: bytes[start..<newline]), into: &events)
            } else {
                take(UnsafeRawBufferPointer(rebasing: bytes[start..<newline]), into: &events)
                if discarding {
                    discarding = false
                } else {
                    partial.withUnsafeBytes { emit($0, into: &events) }
                }
            }
            partial.removeAll(keepingCapacity: true)
            start = newline + 1
        }
        return events
    }

    /// Adds bytes of the line being read, up to ``maximumLineBytes``; past that the line is logged cut, with "…",
    /// and the rest of it is discarded.
    private mutating func take(_ bytes: UnsafeRawBufferPointer, into events: inout [Event]) {
        guard !discarding else { return }
        let room = Self.maximumLineBytes - partial.count
        if bytes.count <= room {
            partial.append(contentsOf: bytes)
            return
        }
        partial.append(contentsOf: bytes.prefix(room))
        if tokens > 0 {
            emit(line: String(decoding: partial, as: UTF8.self) + "…", into: &events)
        } else {
            emit(line: nil, into: &events)
        }
        partial.removeAll(keepingCapacity: true)
        discarding = true
    }

    /// The index of the first `\n` in `bytes` at or after `start`, or nil: eight bytes at a time, as `memchr`
    /// does, so a flood costs a few instructions per word, not a branch per byte.
    static func firstNewline(in bytes: UnsafeRawBufferPointer, from start: Int) -> Int? {
        guard let base = bytes.baseAddress else { return nil }
        let count = bytes.count
        var index = start
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        let newlines: UInt64 = 0x0A0A_0A0A_0A0A_0A0A
        while index + 8 <= count {
            // Byte 0 lowest on any machine; a zero byte of `word` is a newline, and the lowest flagged byte is the
            // first zero (the trick's false positives lie only above a true zero).
            let word = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: index, as: UInt64.self)) ^ newlines
            let flags = (word &- ones) & ~word & highs
            if flags != 0 { return index + flags.trailingZeroBitCount / 8 }
            index += 8
        }
        while index < count {
            if base.load(fromByteOffset: index, as: UInt8.self) == UInt8(ascii: "\n") { return index }
            index += 1
        }
        return nil
    }

    /// The plugin's output ended: the last unterminated line, and any count still owed.
    public mutating func finish(now: Instant) -> [Event] {
        refill(now: now)
        var events: [Event] = []
        if !partial.isEmpty && !discarding {
            partial.withUnsafeBytes { emit($0, into: &events) }
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

    /// Logs one line of these bytes, or counts it dropped; the text is made only for a line let through.
    private mutating func emit(_ bytes: UnsafeRawBufferPointer, into events: inout [Event]) {
        emit(line: tokens > 0 ? String(decoding: bytes, as: UTF8.self) : nil, into: &events)
    }

    /// Logs `line`, or counts it dropped when the bucket is empty (then `line` may be nil).
    private mutating func emit(line: String?, into events: inout [Event]) {
        guard tokens > 0, let line else {
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
