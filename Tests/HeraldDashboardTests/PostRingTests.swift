import Testing

@testable import HeraldDashboard

@Suite struct PostRingTests {
    @Test func keepsTheLastPostsOnlyOldestFirst() {
        var ring = PostRing(capacity: 3)
        for number in 1...5 {
            ring.append(name: "n.\(number)", timeNanoseconds: UInt64(number), payload: [UInt8](), retained: false)
        }
        #expect(ring.count == 3)
        #expect(ring.all.map(\.name) == ["n.3", "n.4", "n.5"])
        #expect(ring.all.map(\.index) == [3, 4, 5])
        #expect(ring.newestIndex == 5)
    }

    @Test func givesThePostsAfterAnIndexAtMostALimitOfTheNewest() {
        var ring = PostRing(capacity: 10)
        for number in 1...8 {
            ring.append(name: "n.\(number)", timeNanoseconds: 0, payload: [UInt8](), retained: false)
        }
        #expect(ring.posts(after: 5).map(\.index) == [6, 7, 8])
        #expect(ring.posts(after: 0, limit: 2).map(\.index) == [7, 8])
        #expect(ring.posts(after: 8).isEmpty)
    }

    @Test func cutsALargePayloadAndSaysSo() {
        var ring = PostRing(capacity: 1)
        ring.append(name: "big", timeNanoseconds: 0, payload: [UInt8](repeating: 65, count: 100_000), retained: true)
        #expect(ring.all[0].payload.count == PostRing.maximumPayloadBytes)
        #expect(ring.all[0].truncated)
        #expect(ring.all[0].retained)
    }
}
