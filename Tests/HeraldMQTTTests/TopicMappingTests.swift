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
}
