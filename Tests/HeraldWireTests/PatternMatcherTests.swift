import HeraldWire
import Testing

struct PatternMatcherTests {
    static let patterns = [
        "session.willResignActive", "session.*", "*.state", "session.**", "**", "*", "a.*.c.**", "a.b", "a.b.c",
        "chat.général", "ev0000", "a.bcdefghijklmnop.q", "abcdefgh.ijklmnopq",
    ]
    static let names = [
        "session.willResignActive", "session.willResignActive.x", "session.willResignActiv", "session.state",
        "session", "session.a.b", "state", "a.b.state", "sessions.a", "a", "a.b", "a.b.c", "a.b.c.d", "a.b.x.d",
        "chat.général", "chat.generale", "ev0000", "ev0001", "a.bcdefghijklmnop.q", "a.bcdefghijklmnop.r",
        "abcdefgh.ijklmnopq", "abcdefgh.ijklmnopr", "b",
    ]

    /// wire.md's rule, written as plainly as possible: segment by segment, `*` any one segment, a final `**` one or
    /// more. (`Pattern.matches` is the byte matcher itself, so it cannot be the reference.)
    static func reference(_ pattern: String, _ name: String) -> Bool {
        let patternSegments = pattern.split(separator: ".", omittingEmptySubsequences: false)
        let nameSegments = name.split(separator: ".", omittingEmptySubsequences: false)
        func agree(_ pair: (Substring, Substring)) -> Bool { pair.0 == "*" || pair.0 == pair.1 }
        if patternSegments.last == "**" {
            let head = patternSegments.dropLast()
            return nameSegments.count > head.count && zip(head, nameSegments).allSatisfy(agree)
        }
        return nameSegments.count == patternSegments.count && zip(patternSegments, nameSegments).allSatisfy(agree)
    }

    /// Every pattern against every name, by bytes and by `String`.
    @Test(arguments: patterns)
    func agreesWithTheRule(pattern text: String) throws {
        let pattern = try Pattern(text)
        let matcher = PatternMatcher(pattern)
        for name in Self.names {
            let bytes = Array(name.utf8)
            let matches = bytes.withUnsafeBytes { matcher.matches($0) }
            #expect(matches == Self.reference(text, name), "\(text) against \(name)")
            #expect(pattern.matches(name) == matches, "\(text) against \(name)")
        }
    }

    @Test func matchesAnExactPatternByItsBytesOnly() throws {
        let matcher = PatternMatcher(try Pattern("session.state"))
        #expect(Array("session.state".utf8).withUnsafeBytes { matcher.matches($0) })
        #expect(!Array("session.statf".utf8).withUnsafeBytes { matcher.matches($0) })
        #expect(!Array("session.stat".utf8).withUnsafeBytes { matcher.matches($0) })
    }
}
