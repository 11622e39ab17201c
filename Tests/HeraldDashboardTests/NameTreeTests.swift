import Testing

@testable import HeraldDashboard

@Suite struct NameTreeTests {
    private func post(
        _ tree: inout NameTree,
        _ name: String,
        _ text: String = "{}",
        sequence: UInt64 = 1,
        retain: Bool = false,
        second: Int64 = 100
    ) {
        tree.postSeen(
            name,
            payload: Array(text.utf8),
            timeNanoseconds: UInt64(second) * 1_000_000_000,
            sequence: sequence,
            setsRetained: retain,
            second: second
        )
    }

    @Test func aPostSetsTheLastTimeAndTheRateAndARetainedOneTheValue() {
        var tree = NameTree()
        post(&tree, "a.b", "{\"x\":1}", sequence: 1, retain: true, second: 100)
        post(&tree, "a.b", "{\"x\":2}", sequence: 2, retain: false, second: 100)
        let entry = tree.entries["a.b"]!
        #expect(entry.retained == Array("{\"x\":1}".utf8), "a plain post leaves the retained value alone")
        #expect(entry.lastPostNanoseconds == 100_000_000_000)
        #expect(tree.posts(of: "a.b", at: 100) == 2)
    }

    @Test func anEmptyRetainedPostClearsTheValue() {
        var tree = NameTree()
        post(&tree, "a", "{}", sequence: 1, retain: true)
        post(&tree, "a", "", sequence: 2, retain: true)
        #expect(tree.entries["a"]!.retained == nil)
    }

    @Test func aGetAnswerOlderThanAPostSeenDoesNotReplaceIt() {
        var tree = NameTree()
        post(&tree, "a", "{\"new\":true}", sequence: 9, retain: true)
        tree.retainedValueRead("a", payload: Array("{\"old\":true}".utf8), sequence: 5)
        #expect(tree.entries["a"]!.retained == Array("{\"new\":true}".utf8))
        tree.retainedValueRead("b", payload: Array("{\"b\":1}".utf8), sequence: 3, timeNanoseconds: 77)
        #expect(tree.entries["b"]!.retained == Array("{\"b\":1}".utf8))
        #expect(tree.entries["b"]!.lastPostNanoseconds == 77, "the value's post time until a post is seen")
        #expect(tree.entries["a"]!.lastPostNanoseconds == 100_000_000_000, "a post seen is newer than any GET")
        tree.retainedValueRead("c", payload: nil, sequence: 0)
        #expect(tree.entries["c"] != nil && tree.entries["c"]!.retained == nil, "a name listed without a value")
    }

    @Test func namesPastTheCapacityAreCountedNotKeptButTheDaemonsOwnStillFit() {
        var tree = NameTree(capacity: 2, reservedCapacity: 1)
        post(&tree, "a")
        post(&tree, "b")
        post(&tree, "c")
        post(&tree, "c")
        #expect(tree.count == 2)
        #expect(tree.untrackedPosts == 2)
        post(&tree, "herald.plugin.x", retain: true)
        post(&tree, "bridge.dbus", retain: true)
        #expect(tree.entries["herald.plugin.x"] != nil)
        #expect(tree.entries["bridge.dbus"] == nil, "the reserved room is bounded too")
        #expect(tree.untrackedPosts == 3)
    }

    @Test func aLargeValueIsCutAndMarked() {
        var tree = NameTree()
        post(&tree, "big", String(repeating: "x", count: 100_000), retain: true)
        #expect(tree.entries["big"]!.retained!.count == NameTree.maximumValueBytes)
        #expect(tree.entries["big"]!.retainedTruncated)
    }

    @Test func changedNamesAreTakenOnceInBoundedBatches() {
        var tree = NameTree()
        for name in ["c", "a", "b"] { post(&tree, name) }
        #expect(tree.takeChanged(limit: 2) == ["a", "b"])
        #expect(tree.takeChanged(limit: 2) == ["c"])
        #expect(tree.takeChanged().isEmpty)
    }

    @Test func namesAreSortedAsATreeEachParentRightBeforeItsChildren() {
        var tree = NameTree()
        for name in ["a.b", "a", "a-b", "B", "a.b.c", "a.a"] { post(&tree, name) }
        #expect(tree.sortedNames == ["B", "a", "a.a", "a.b", "a.b.c", "a-b"])
    }

    @Test func subscriberCountsAreSetChangedOnlyWhenTheyDifferAndUnknownOnceUnlisted() {
        var tree = NameTree()
        post(&tree, "a")
        post(&tree, "b")
        _ = tree.takeChanged()
        tree.subscriberCountsRead([("a", 2), ("c", 0)])
        #expect(tree.entries["a"]?.subscribers == 2)
        #expect(tree.entries["b"]?.subscribers == nil, "not listed: unknown")
        #expect(tree.entries["c"]?.subscribers == 0, "a listed name joins the tree")
        #expect(tree.takeChanged() == ["a", "c"])
        tree.subscriberCountsRead([("a", 2), ("c", 0)])
        #expect(tree.takeChanged().isEmpty, "the same counts change nothing")
        tree.subscriberCountsRead([("c", 1)])
        #expect(tree.entries["a"]?.subscribers == nil, "no longer listed: unknown again")
        #expect(tree.takeChanged() == ["a", "c"])
        tree.subscriberCountsRead([("c", nil)])
        #expect(tree.entries["c"]?.subscribers == nil, "a daemon that cannot count")
    }
}
