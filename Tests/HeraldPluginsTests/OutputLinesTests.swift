import HeraldPlugins
import Testing

struct OutputLinesTests {
    private let start = Instant(nanoseconds: 1_000_000_000)

    @Test func splitsLinesAcrossReadsAndKeepsAnUnterminatedOneForTheEnd() {
        var lines = OutputLines()
        #expect(lines.feed(Array("one\ntw".utf8), now: start) == [.line("one")])
        #expect(lines.feed(Array("o\nthree".utf8), now: start) == [.line("two")])
        #expect(lines.finish(now: start) == [.line("three")])
        #expect(lines.finish(now: start).isEmpty)
    }

    @Test func cutsALongLineAndDiscardsTheRestOfIt() {
        var lines = OutputLines()
        let long = [UInt8](repeating: UInt8(ascii: "x"), count: OutputLines.maximumLineBytes + 500)
        let events = lines.feed(long + Array("\nnext\n".utf8), now: start)
        #expect(events.count == 2)
        #expect(events.first == .line(String(repeating: "x", count: OutputLines.maximumLineBytes) + "…"))
        #expect(events.last == .line("next"))
    }

    @Test func aFloodIsCutToTheBurstAndTheDroppedLinesAreCountedExactly() {
        var lines = OutputLines(burst: 10, linesPerSecond: 5)
        let flood = Array(String(repeating: "spam\n", count: 1000).utf8)
        let first = lines.feed(flood, now: start)
        #expect(first.count == 10)
        #expect(lines.owesCount)
        // Nothing earned yet: still owed.
        #expect(lines.flush(now: start).isEmpty)
        // A second later, five tokens: the count comes first, then the next line.
        let later = Instant(nanoseconds: start.nanoseconds + 1_000_000_000)
        #expect(lines.feed(Array("after\n".utf8), now: later) == [.dropped(990), .line("after")])
        #expect(!lines.owesCount)
    }

    @Test func aFloodThatStopsGetsItsCountFromTheTimer() {
        var lines = OutputLines(burst: 2, linesPerSecond: 1)
        _ = lines.feed(Array("a\nb\nc\nd\n".utf8), now: start)
        let later = Instant(nanoseconds: start.nanoseconds + 1_500_000_000)
        #expect(lines.flush(now: later) == [.dropped(2)])
        #expect(lines.flush(now: later).isEmpty)
    }

    @Test func invalidUTF8IsRepaired() {
        var lines = OutputLines()
        #expect(lines.feed([0x61, 0xFF, 0x62, 0x0A], now: start) == [.line("a\u{FFFD}b")])
    }
}

struct WallClockTextTests {
    @Test(arguments: [
        (UInt64(0), "1970-01-01T00:00:00Z"),
        (951_782_400_000_000_000, "2000-02-29T00:00:00Z"),
        (1_795_597_200_999_999_999, "2026-11-25T09:00:00Z"),
        (4_102_444_799_000_000_000, "2099-12-31T23:59:59Z"),
    ])
    func formatsUTCToTheSecond(nanoseconds: UInt64, text: String) {
        #expect(WallClockText.iso8601(nanosecondsSince1970: nanoseconds) == text)
    }
}

/// Reading a plugin's output costs heraldd little whatever the plugin writes (issue 27): lines are found a word at
/// a time, a dropped line is never made into text, and the budget pauses a flood.
struct OutputCostTests {
    private let start = Instant(nanoseconds: 1_000_000_000)

    /// The same lines whatever the reads' boundaries, lines of any length around the word size included.
    @Test func splitsTheSameLinesWhateverTheReadBoundaries() {
        var generator = SplitMix(seed: 7)
        var text: [UInt8] = []
        var expected: [String] = []
        for _ in 0..<300 {
            let length = Int(generator.next() % 40)
            let line = (0..<length).map { _ in UInt8(ascii: "a") + UInt8(generator.next() % 26) }
            text += line + [UInt8(ascii: "\n")]
            expected.append(String(decoding: line, as: UTF8.self))
        }
        for chunk in [1, 3, 7, 8, 9, 64, 4096] {
            var lines = OutputLines(burst: 10_000, linesPerSecond: 10_000)
            var got: [OutputLines.Event] = []
            var index = 0
            while index < text.count {
                got += lines.feed(text[index..<min(index + chunk, text.count)], now: start)
                index += chunk
            }
            #expect(got == expected.map { .line($0) }, "chunk \(chunk)")
        }
    }

    /// A line as long as the 100 MB one, in 64 KiB reads: cut once, the rest discarded, and the next line
    /// intact.
    @Test func aHugeLineInManyReadsIsCutOnceAndTheNextLineIsIntact() {
        var lines = OutputLines()
        let read = [UInt8](repeating: UInt8(ascii: "x"), count: 65536)
        var events: [OutputLines.Event] = []
        for _ in 0..<200 { events += lines.feed(read, now: start) }
        events += lines.feed(Array("\nnext\n".utf8), now: start)
        #expect(events == [.line(String(repeating: "x", count: OutputLines.maximumLineBytes) + "…"), .line("next")])
    }

    @Test func aFloodOfEmptyAndShortLinesIsCountedExactly() {
        var lines = OutputLines(burst: 3, linesPerSecond: 1)
        let flood = Array(String(repeating: "y\n\n", count: 50_000).utf8)
        let events = lines.feed(flood, now: start)
        #expect(events == [.line("y"), .line(""), .line("y")])
        #expect(lines.finish(now: start) == [.dropped(100_000 - 3)])
    }

    @Test func theBudgetPausesReadingUntilTheWindowEndsOnceItIsSpent() {
        var budget = OutputBudget(bytesPerWindow: 100_000, window: .milliseconds(100))
        #expect(budget.read(65536, now: start) == nil)
        let later = start + .milliseconds(10)
        // The second read spends the window's budget: resume when the window that began with the first ends.
        #expect(budget.read(65536, now: later) == start + .milliseconds(100))
        // A new window begins with the next read.
        let resumed = start + .milliseconds(100)
        #expect(budget.read(65536, now: resumed) == nil)
        // A window that passed without spending the budget starts afresh.
        #expect(budget.read(65536, now: resumed + .milliseconds(150)) == nil)
    }

    @Test func theDefaultBudgetIsAMebibytePerTenthOfASecond() {
        let budget = OutputBudget()
        #expect(budget.bytesPerWindow == 1 << 20)
        #expect(budget.window == .milliseconds(100))
    }
}
