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

    /// Every pattern against every name: the byte matcher says what `Pattern.matches` says.
    @Test(arguments: patterns)
    func agreesWithPatternMatches(pattern text: String) throws {
        let pattern = try Pattern(text)
        let matcher = PatternMatcher(pattern)
        for name in Self.names {
            let bytes = Array(name.utf8)
            let matches = bytes.withUnsafeBytes { matcher.matches($0) }
            #expect(matches == pattern.matches(name), "\(text) against \(name)")
        }
    }

    @Test func matchesAnExactPatternByItsBytesOnly() throws {
        let matcher = PatternMatcher(try Pattern("session.state"))
        #expect(Array("session.state".utf8).withUnsafeBytes { matcher.matches($0) })
        #expect(!Array("session.statf".utf8).withUnsafeBytes { matcher.matches($0) })
        #expect(!Array("session.stat".utf8).withUnsafeBytes { matcher.matches($0) })
    }
}
