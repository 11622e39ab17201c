import HeraldWire
import Testing

struct PatternTests {
    /// The table of wire.md, "Patterns", and more.
    @Test(arguments: [
        ("session.willResignActive", "session.willResignActive", true),
        ("session.willResignActive", "session.willResignActive.x", false),
        ("session.willResignActive", "session.willResignActiv", false),
        ("session.*", "session.state", true),
        ("session.*", "session.didBecomeActive", true),
        ("session.*", "session", false),
        ("session.*", "session.a.b", false),
        ("*.state", "session.state", true),
        ("*.state", "state", false),
        ("*.state", "a.b.state", false),
        ("session.**", "session.a", true),
        ("session.**", "session.a.b.c", true),
        ("session.**", "session", false),
        ("session.**", "sessions.a", false),
        ("**", "a", true),
        ("**", "a.b.c", true),
        ("*", "a", true),
        ("*", "a.b", false),
        ("a.*.c.**", "a.b.c.d", true),
        ("a.*.c.**", "a.b.c", false),
        ("a.*.c.**", "a.b.x.d", false),
        ("chat.général", "chat.général", true),
        ("chat.général", "chat.generale", false),
    ])
    func matchesAsTheSpecSays(pattern: String, name: String, matches: Bool) throws {
        #expect(try Pattern(pattern).matches(name) == matches)
    }

    @Test(arguments: [
        ("a.**.b", "'**' is allowed only as the last segment"),
        ("**.a", "'**' is allowed only as the last segment"),
        ("a*", "'*' must be a whole segment, not part of \"a*\""),
        ("a.b*c", "'*' must be a whole segment, not part of \"b*c\""),
        ("a..*", "empty segment at byte 2"),
        ("", "it is empty"),
        ("a. b", "a space at byte 2"),
    ])
    func rejectsInvalidPatterns(pattern: String, reason: String) {
        #expect(throws: WireError(.invalidPattern, "invalid pattern \"\(pattern)\": \(reason)")) {
            try Pattern(pattern)
        }
    }

    @Test func knowsWhichPatternsAreExact() throws {
        #expect(try Pattern("a.b").isExact)
        #expect(try !Pattern("a.*").isExact)
        #expect(try !Pattern("a.**").isExact)
    }
}
