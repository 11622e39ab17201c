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
