import HeraldMQTT
import Testing

struct TopicMappingTests {
    let mapping = TopicMapping()!

    @Test(arguments: [
        ("a.b.c", "herald/a/b/c"), ("build.done", "herald/build/done"), ("x", "herald/x"),
        ("hosts.h1.online", "herald/$hosts/h1/online"), ("hosts.h1.offline", "herald/hosts/h1/offline"),
        ("hosts.h1.online.x", "herald/hosts/h1/online/x"), ("unicode.é", "herald/unicode/é"),
    ])
    func mapsANameToItsTopicAndBack(name: String, topic: String) throws {
        #expect(try mapping.topic(forName: name) == topic)
        #expect(try mapping.name(forTopic: topic) == name)
    }

    @Test(arguments: ["a/b.c", "a.b+", "a.#", "x.+.y"])
    func refusesToExportASegmentWithATopicCharacter(name: String) {
        #expect(throws: TopicMapping.Refusal.self) { try mapping.topic(forName: name) }
    }

    @Test func refusesToExportTheDollarHostsSegment() {
        #expect(throws: TopicMapping.Refusal.reservedSegment("$hosts")) {
            try mapping.topic(forName: "$hosts.a.online")
        }
    }

    @Test(arguments: [
        ("*", "herald/+"), ("**", "herald/#"), ("a.*.c", "herald/a/+/c"), ("a.**", "herald/a/#"),
        ("a.b", "herald/a/b"), ("*.*.**", "herald/+/+/#"),
    ])
    func mapsAPatternToAFilter(pattern: String, filter: String) throws {
        #expect(try mapping.filter(forPattern: pattern) == filter)
    }

    @Test func refusesAPatternWithATopicCharacter() {
        #expect(throws: TopicMapping.Refusal.segmentHasTopicCharacter("b/c")) {
            try mapping.filter(forPattern: "a.b/c.*")
        }
    }

    @Test(arguments: [
        "other/a", "herald", "herald/", "heraldx/a", "herald/a//b", "herald/a/", "herald/a.b/c",
        "herald/$hosts/h1", "herald/$hosts/h1/state", "herald/hosts/h1/online",
    ])
    func refusesToImportATopicWithNoName(topic: String) {
        #expect(throws: TopicMapping.Refusal.self) { try mapping.name(forTopic: topic) }
    }

    @Test func usesAMultiLevelPrefix() throws {
        let nested = try #require(TopicMapping(prefix: "home/herald"))
        #expect(try nested.topic(forName: "a.b") == "home/herald/a/b")
        #expect(try nested.name(forTopic: "home/herald/a/b") == "a.b")
        #expect(nested.presenceFilter == "home/herald/$hosts/+/online")
        #expect(nested.presenceTopic(hostID: "h2") == "home/herald/$hosts/h2/online")
    }

    @Test(arguments: ["", "a//b", "a/+", "#", "$SYS", "a/"])
    func refusesAPrefixThatIsNoPlainTopic(prefix: String) {
        #expect(TopicMapping(prefix: prefix) == nil)
    }

    // The mapping takes the usual name or topic in one pass and the rest by the general rules; these check both
    // against the rules as the type's documentation states them, over every short combination of the segments and
    // levels the rules single out.

    @Test func mapsEveryShortNameAsTheRulesSay() {
        let segments = ["a", "hosts", "$hosts", "online", "", "é", "x/y", "+", "#", "h1"]
        for name in Self.combinations(of: segments, upTo: 3, separator: ".") {
            let parts = name.split(separator: ".", omittingEmptySubsequences: false)
            let expected: String?
            if parts.contains(where: { $0.contains("/") || $0.contains("+") || $0.contains("#") }) {
                expected = nil
            } else if parts[0] == "$hosts" {
                expected = nil
            } else if parts.count == 3 && parts[0] == "hosts" && parts[2] == "online" {
                expected = "herald/$hosts/\(parts[1])/online"
            } else {
                expected = "herald/" + parts.joined(separator: "/")
            }
            #expect((try? mapping.topic(forName: name)) == expected, "name \(name)")
        }
    }

    @Test func mapsEveryShortTopicAsTheRulesSay() {
        let levels = ["a", "hosts", "$hosts", "online", "", "a.b", "é", "h1"]
        for rest in Self.combinations(of: levels, upTo: 3, separator: "/") {
            for head in ["herald/", "heraldx/", "herald"] {
                let topic = head + rest
                // What follows "herald/", however the topic was put together.
                let under = topic.hasPrefix("herald/") ? String(topic.dropFirst("herald/".count)) : nil
                let parts = under?.split(separator: "/", omittingEmptySubsequences: false) ?? []
                var expected: String?
                if let under, !under.isEmpty, parts.allSatisfy({ !$0.isEmpty && !$0.contains(".") }) {
                    if parts.count == 3 && parts[2] == "online" && parts[0] == "$hosts" {
                        expected = "hosts.\(parts[1]).online"
                    } else if parts.count == 3 && parts[2] == "online" && parts[0] == "hosts" {
                        expected = nil
                    } else if parts[0] == "$hosts" {
                        expected = nil
                    } else {
                        expected = parts.joined(separator: ".")
                    }
                }
                #expect((try? mapping.name(forTopic: topic)) == expected, "topic \(topic)")
            }
        }
    }

    /// Every sequence of 1 to `count` of `parts`, joined with `separator`.
    static func combinations(of parts: [String], upTo count: Int, separator: String) -> [String] {
        var all: [[String]] = parts.map { [$0] }
        var last = all
        for _ in 1..<count {
            last = last.flatMap { prefix in parts.map { prefix + [$0] } }
            all += last
        }
        return all.map { $0.joined(separator: separator) }
    }
}
