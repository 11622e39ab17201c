import HeraldBroker
import HeraldWire
import Testing

struct PatternIndexTests {
    private func matches(_ index: PatternIndex<Int>, _ name: String) -> [Int] {
        var found: [Int] = []
        index.forEachMatch(of: name) { found.append($0) }
        return found.sorted()
    }

    @Test func findsExactAndWildcardSubscribers() throws {
        var index = PatternIndex<Int>()
        index.insert(try Pattern("a.b"), for: 1)
        index.insert(try Pattern("a.*"), for: 2)
        index.insert(try Pattern("a.**"), for: 3)
        index.insert(try Pattern("*.b"), for: 4)
        index.insert(try Pattern("**"), for: 5)
        index.insert(try Pattern("x.y"), for: 6)
        #expect(matches(index, "a.b") == [1, 2, 3, 4, 5])
        #expect(matches(index, "a.c") == [2, 3, 5])
        #expect(matches(index, "a.b.c") == [3, 5])
        #expect(matches(index, "a") == [5])
        #expect(matches(index, "z.b") == [4, 5])
    }

    @Test func countsRepeatedPatternsPerKey() throws {
        var index = PatternIndex<Int>()
        let pattern = try Pattern("a.*")
        index.insert(pattern, for: 1)
        index.insert(pattern, for: 1)
        index.remove(pattern, for: 1)
        #expect(matches(index, "a.x") == [1])
        index.remove(pattern, for: 1)
        #expect(matches(index, "a.x").isEmpty)
    }

    @Test func prunesEmptyNodesSoChurnLeavesNothingBehind() throws {
        var index = PatternIndex<Int>()
        let baseline = index.nodeCount
        for round in 0..<100 {
            let pattern = try Pattern("p\(round).*.q.**")
            index.insert(pattern, for: round)
            index.remove(pattern, for: round)
        }
        #expect(index.nodeCount == baseline)
        #expect(index.isEmpty)
    }

    @Test func agreesWithPatternMatchingOnRandomCases() throws {
        let segments = ["a", "b", "*"]
        var generator = SystemRandomNumberGenerator()
        var index = PatternIndex<Int>()
        var patterns: [Pattern] = []
        for key in 0..<200 {
            let count = Int.random(in: 1...3, using: &generator)
            var text = (0..<count).map { _ in segments.randomElement(using: &generator)! }.joined(separator: ".")
            if Bool.random(using: &generator) { text += ".**" }
            let pattern = try Pattern(text)
            patterns.append(pattern)
            index.insert(pattern, for: key)
        }
        for _ in 0..<200 {
            let count = Int.random(in: 1...4, using: &generator)
            let name = (0..<count).map { _ in ["a", "b"].randomElement(using: &generator)! }.joined(separator: ".")
            let expected = patterns.indices.filter { patterns[$0].matches(name) }
            #expect(Set(matches(index, name)) == Set(expected), "name \(name)")
        }
    }
}
