import HeraldPlugins
import HeraldWire
import Testing

struct PatternOverlapTests {
    /// Pairs of patterns and whether some name matches both, with such a name (or nil) to check the answer by
    /// matching.
    @Test(arguments: [
        ("session.*", "session.*", true, "session.x"),
        ("session.*", "session.state", true, "session.state"),
        ("session.*", "session.**", true, "session.x"),
        ("session.*", "**", true, "session.x"),
        ("session.*", "*.state", true, "session.state"),
        ("session.*", "*.*", true, "session.x"),
        ("session.*", "*", false, nil),
        ("session.*", "session", false, nil),
        ("session.*", "chat.*", false, nil),
        ("session.*", "session.*.*", false, nil),
        ("session.*", "session.a.**", false, nil),
        ("session.**", "session.a.b.c", true, "session.a.b.c"),
        ("session.**", "session", false, nil),
        ("session.**", "*.a.**", true, "session.a.x"),
        ("session.**", "chat.**", false, nil),
        ("a.**", "*.b", true, "a.b"),
        ("a.**", "*", false, nil),
        ("**", "x", true, "x"),
        ("**", "**", true, "x"),
        ("*.b.*", "a.*.c", true, "a.b.c"),
        ("*.b.*", "a.c.*", false, nil),
        ("mqtt.**", "mqtt.home.+", true, "mqtt.home.+"),
    ])
    func decidesWhetherTwoPatternsShareAName(a: String, b: String, overlaps: Bool, witness: String?) throws {
        let (first, second) = (try Pattern(a), try Pattern(b))
        #expect(first.overlaps(second) == overlaps)
        #expect(second.overlaps(first) == overlaps, "overlap is symmetric")
        if let witness {
            #expect(first.matches(witness) && second.matches(witness))
        }
    }

    @Test func findsNoOverlapWhenTheOnlyCommonNameIsLongerThanANameMayBe() throws {
        let long = String(repeating: "x", count: 200)
        let first = try Pattern("\(long).*")
        let second = try Pattern("*.\(long)")
        #expect(!first.overlaps(second))
        #expect(first.overlaps(try Pattern("*.\(String(repeating: "y", count: 54))")))
    }
}
