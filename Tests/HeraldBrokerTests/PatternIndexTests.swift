import HeraldWire
import Testing

@testable import HeraldBroker

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

/// `matches(ofName:)` remembers the last name's keys until a pattern changes.
struct PatternIndexCacheTests {
    static func cached(_ index: inout PatternIndex<Int>, _ name: String) -> [Int] {
        var name = name
        return name.withUTF8 { index.matches(ofName: UnsafeRawBufferPointer($0)) }.sorted()
    }

    @Test func anInsertOrRemoveForgetsTheCachedAnswer() throws {
        var index = PatternIndex<Int>()
        index.insert(try Pattern("a.b"), for: 1)
        #expect(Self.cached(&index, "a.b") == [1])
        #expect(Self.cached(&index, "a.b") == [1])
        index.insert(try Pattern("a.*"), for: 2)
        #expect(Self.cached(&index, "a.b") == [1, 2])
        index.remove(try Pattern("a.b"), for: 1)
        #expect(Self.cached(&index, "a.b") == [2])
        #expect(Self.cached(&index, "a.c") == [2])
        #expect(Self.cached(&index, "x") == [])
        #expect(Self.cached(&index, "a.b") == [2])
    }

    @Test func aCopyKeepsItsOwnCache() throws {
        var index = PatternIndex<Int>()
        index.insert(try Pattern("a"), for: 1)
        index.insert(try Pattern("b"), for: 2)
        #expect(Self.cached(&index, "a") == [1])
        var copy = index
        #expect(Self.cached(&copy, "b") == [2])
        #expect(Self.cached(&index, "a") == [1])
        #expect(Self.cached(&index, "b") == [2])
        #expect(Self.cached(&copy, "a") == [1])
    }
}

/// The exact-name table the index looks names up in, by their bytes.
struct NameTableTests {
    @Test func sequentialNamesDoNotPileUp() {
        // The harness's names, and names that differ only in their last bytes: a weak hash put these in runs.
        for names in [(0..<1000).map { "ev" + String(10000 + $0).dropFirst() }, (0..<1000).map { "session.user\($0)" }]
        {
            var table = NameTable<Int>(seed: 0)
            for name in names { table.update(name, default: 0) { _ in true } }
            #expect(table.count == names.count)
            #expect(table.longestProbe < 24, "longest probe \(table.longestProbe) for \(names.first!)...")
        }
    }

    @Test func agreesWithADictionaryUnderRandomInsertsAndRemovals() {
        var generator = SystemRandomNumberGenerator()
        let seed = UInt64.random(in: .min ... .max, using: &generator)
        var random = SeededRandom(seed: seed)
        var index = PatternIndex<Int>()
        var model: [String: [Int: Int]] = [:]
        // Few names, so probe runs collide and removals shift slots back.
        let names = (0..<40).map { "n\($0)" } + ["a.much.longer.name.than.eight.bytes", "x"]
        for _ in 0..<5_000 {
            let name = names[Int(random.next() % UInt64(names.count))]
            let key = Int(random.next() % 4)
            let pattern = try! Pattern(name)
            if random.next() % 3 == 0 {
                index.remove(pattern, for: key)
                if let count = model[name]?[key] { model[name]![key] = count > 1 ? count - 1 : nil }
                if model[name]?.isEmpty == true { model[name] = nil }
            } else {
                index.insert(pattern, for: key)
                model[name, default: [:]][key, default: 0] += 1
            }
        }
        for name in names + ["absent", "n400"] {
            var byString: [Int] = []
            index.forEachMatch(of: name) { byString.append($0) }
            var byBytes: [Int] = []
            var copy = name
            copy.withUTF8 { bytes in index.forEachMatch(ofName: UnsafeRawBufferPointer(bytes)) { byBytes.append($0) } }
            let expected = (model[name]?.keys).map { Array($0).sorted() } ?? []
            #expect(byString.sorted() == expected, "seed \(seed), name \(name)")
            #expect(byBytes.sorted() == expected, "seed \(seed), name \(name)")
        }
        #expect(Set(index.exactNames) == Set(model.keys), "seed \(seed)")
    }
}
