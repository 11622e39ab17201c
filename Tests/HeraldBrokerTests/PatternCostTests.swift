import HeraldWire
import Testing

@testable import HeraldBroker

/// `--max-pattern-cost`: what a connection's wildcard patterns add to the matching of every post is charged to
/// it and bounded, so a post's matching work stays bounded whatever patterns are registered.
struct PatternCostTests {
    /// Wildcard patterns of `segments` segments, `count` of them, each with `*` where its index has a bit set
    /// among the first segments and `s` elsewhere: the shape of issue 15's attack, which shares little of the trie.
    static func hostilePatterns(count: Int, segments: Int) -> [String] {
        (0..<count).map { index in
            (0..<segments).map { position in
                position < 12 && index & (1 << position) != 0 ? "*" : "s"
            }
            .joined(separator: ".")
        }
    }

    static func error(_ frames: [Frame]) -> WireError? {
        if case .error(let error) = frames.last { return error }
        return nil
    }

    @Test func costsASegmentPerWildcardSegmentAndNothingForAnExactPattern() throws {
        #expect(try Pattern("session.state").cost == 0)
        #expect(try Pattern("session.*").cost == 2)
        #expect(try Pattern("*.b.*").cost == 3)
        #expect(try Pattern("a.**").cost == 2)
        #expect(try Pattern("**").cost == 1)
    }

    @Test func refusesASubscriptionPastTheConnectionsPatternCostWithPatternTooComplex() {
        var harness = BrokerHarness(maxPatternCost: 10)
        let client = harness.connect(1)
        harness.subscribe(client, 1, "a.*.c")
        harness.subscribe(client, 2, "x.*.y.z")
        harness.subscribe(client, 3, "an.exact.name.costs.nothing")
        #expect(harness.output(of: client).count == 3)
        #expect(
            harness.send(.subscribe(.init(subscription: 4, pattern: try! Pattern("p.*.q.r"))), from: client)
                .closesConnection
        )
        let error = Self.error(harness.output(of: client))
        #expect(error?.code == .patternTooComplex)
        #expect(error?.request == 4)
        #expect(
            error?.reason
                == "this pattern costs 4 (its segments) and this connection's patterns already cost 7, the limit is 10"
        )
        #expect(error?.code.description == "PATTERN_TOO_COMPLEX")
    }

    @Test func aMonitorIsChargedItsPatternToo() {
        var harness = BrokerHarness(maxPatternCost: 3)
        let client = harness.connect(1)
        harness.subscribe(client, 1, "a.*.c")
        _ = harness.output(of: client)
        #expect(harness.send(.monitor(.init(request: 2)), from: client).closesConnection)
        #expect(Self.error(harness.output(of: client))?.code == .patternTooComplex)
        let monitor = harness.connect(2)
        #expect(harness.send(.monitor(.init(request: 2)), from: monitor).keepsConnection)
        #expect(harness.broker.connections[monitor.rawValue]!.patternCost == 1)
    }

    @Test func unsubscribingGivesThePatternCostBackAndOtherConnectionsHaveTheirOwn() {
        var harness = BrokerHarness(maxPatternCost: 6)
        let client = harness.connect(1)
        let other = harness.connect(2)
        harness.subscribe(client, 1, "a.*.c")
        harness.subscribe(client, 2, "b.*.c")
        harness.subscribe(other, 1, "a.*.c")
        harness.subscribe(other, 2, "b.*.c")
        harness.send(.unsubscribe(.init(subscription: 1)), from: client)
        harness.subscribe(client, 3, "d.*.f")
        let frames = harness.output(of: client)
        #expect(frames.last == .ack(.init(request: 3, sequence: 0)))
        #expect(Self.error(frames) == nil)
        #expect(Self.error(harness.output(of: other)) == nil)
    }

    /// Issue 15, case 4: long patterns mixing literals and `*`. A connection gets as many as its cost allows (the
    /// next is refused), and a post's matching work (a lookup per shape, a subtraction per `*`, a check per
    /// connection matched) is at most the subscribers' cost, whether it matches or not.
    @Test func aPostsMatchingWorkIsAtMostTheSubscribersPatternCost() {
        let cost = 4096
        var harness = BrokerHarness(maxSubscriptions: 1024, maxPatternCost: cost)
        let publisher = harness.connect(1)
        // Index 0 has no `*`: it would be exact, so it is left out.
        let patterns = Self.hostilePatterns(count: 1024, segments: 120).dropFirst()
        let fitting = cost / 120
        var hostile: [ConnectionID] = []
        for raw in 2...5 {
            let id = harness.connect(raw)
            hostile.append(id)
            for (index, pattern) in patterns.prefix(fitting).enumerated() {
                harness.subscribe(id, UInt32(index + 1), pattern)
            }
            #expect(Self.error(harness.output(of: id)) == nil)
        }
        let refused = harness.connect(6)
        for (index, pattern) in patterns.prefix(fitting + 1).enumerated() {
            harness.subscribe(refused, UInt32(index + 1), pattern)
        }
        #expect(Self.error(harness.output(of: refused))?.code == .patternTooComplex)

        let matching = Array(repeating: "s", count: 120).joined(separator: ".")
        let missing = String(matching.dropLast()) + "t"
        let before = harness.broker.index.matchingWork
        let posts = 10
        for _ in 0..<posts {
            // Alternating, so neither is answered from the last name's cache.
            harness.post(publisher, matching)
            harness.post(publisher, missing)
        }
        let work = harness.broker.index.matchingWork - before
        // At least a lookup per shape (the four connections share theirs), at most their summed costs.
        #expect(work >= 2 * posts * fitting)
        #expect(work <= 2 * posts * (hostile.count * cost + 1))
        // Where the trie walked every pattern to its end (~4,000 nodes a post), a lookup per shape and a
        // subtraction per `*`, with the stars in the first 12 segments.
        #expect(work <= 2 * posts * fitting * 13 + posts * hostile.count)
        for id in hostile {
            #expect(BrokerHarness.notifications(harness.output(of: id)).count == posts)
        }
    }

    /// Matching by shape agrees with `Pattern.matches` on patterns and names up to 40 segments, with `*` and `**`
    /// anywhere they may be, and removing every pattern leaves nothing behind.
    @Test(arguments: [7, 8, 9] as [UInt64])
    func matchingByShapeAgreesWithPatternMatching(seed: UInt64) throws {
        var random = SplitMix(seed: seed)
        func pick(_ count: Int) -> Int { Int(random.next() % UInt64(count)) }
        var index = PatternIndex<Int>()
        var patterns: [Pattern] = []
        for key in 0..<300 {
            let count = 1 + pick(40)
            var text = (0..<count).map { _ in ["a", "bb", "*", "*", "ccc.d"][pick(5)] }.joined(separator: ".")
            if pick(3) == 0 { text += ".**" }
            let pattern = try Pattern(text)
            patterns.append(pattern)
            index.insert(pattern, for: key)
        }
        let footprint = index.nodeCount
        for _ in 0..<500 {
            // Names built from a pattern, with its wildcards filled in and now and then one segment changed.
            var text = patterns[pick(patterns.count)].text
                .split(separator: ".").map { $0 == "*" || $0 == "**" ? ["a", "bb", "x"][pick(3)] : String($0) }
                .joined(separator: ".")
            if pick(4) == 0 { text += ".e" }
            if pick(4) == 0 { text = "z." + text.split(separator: ".").dropFirst().joined(separator: ".") }
            guard text.utf8.count <= 255, !text.isEmpty, !text.hasSuffix(".") else { continue }
            let expected = Set(patterns.indices.filter { patterns[$0].matches(text) })
            var found = Set<Int>()
            index.forEachMatch(of: text) { found.insert($0) }
            #expect(found == expected, "name \(text)")
        }
        #expect(footprint > 0)
        for (key, pattern) in patterns.enumerated() { index.remove(pattern, for: key) }
        #expect(index.nodeCount == 0)
        #expect(index.isEmpty)
    }
}
