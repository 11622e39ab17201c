import Testing

@testable import HeraldBroker

/// The ring buffer under each connection's queue, checked against an array doing the same operations: the
/// ring wraps, grows, and is shared by copies until one of them changes.
@Suite struct DequeTests {
    private func contents(_ deque: Deque<Int>) -> [Int] {
        (0..<deque.count).map { deque[$0] }
    }

    @Test func appendsAndRemovesAtBothEndsAcrossTheWrap() {
        var deque = Deque<Int>()
        var model: [Int] = []
        // Eight slots at first: taking from the front while appending at the back walks the ring around
        // several times without growing it.
        for value in 0..<40 {
            deque.append(value)
            model.append(value)
            if deque.count > 5 {
                #expect(deque.removeFirst() == model.removeFirst())
            }
            #expect(contents(deque) == model)
        }
        deque.prepend(-1)
        model.insert(-1, at: 0)
        #expect(contents(deque) == model)
        #expect(deque.first == -1)
    }

    @Test func growsWithTheOrderKeptWhenTheRingWraps() {
        var deque = Deque<Int>()
        for value in 0..<6 { deque.append(value) }
        for _ in 0..<4 { deque.removeFirst() }
        // Head at slot 4 of 8: the next appends wrap, then the ring doubles.
        for value in 6..<30 { deque.append(value) }
        #expect(contents(deque) == Array(4..<30))
        for value in (-5)...(-1) { deque.prepend(value) }
        #expect(contents(deque) == [-1, -2, -3, -4, -5] + Array(4..<30))
    }

    @Test func insertsAndRemovesInTheMiddle() {
        var deque = Deque<Int>()
        var model: [Int] = []
        for value in 0..<10 {
            deque.append(value)
            model.append(value)
        }
        for (value, index) in [(100, 0), (101, 1), (102, 5), (103, 13), (104, 7)] {
            deque.insert(value, at: index)
            model.insert(value, at: index)
            #expect(contents(deque) == model)
        }
        for index in [0, 3, 9, 11] {
            #expect(deque.remove(at: index) == model.remove(at: index))
            #expect(contents(deque) == model)
        }
    }

    @Test func changesInPlaceThroughTheSubscriptAndTheLastElement() {
        var deque = Deque<Int>()
        for value in 0..<5 { deque.append(value) }
        deque[2] += 40
        deque.withLast { $0 = -$0 }
        #expect(contents(deque) == [0, 1, 42, 3, -4])
    }

    @Test func aCopyIsIndependentOfTheOriginal() {
        var original = Deque<Int>()
        for value in 0..<6 { original.append(value) }
        var copy = original
        copy[1] += 10
        #expect(contents(original) == [0, 1, 2, 3, 4, 5])
        copy[1] -= 10
        copy[0] = 99
        copy.append(6)
        copy.withLast { $0 += 1 }
        #expect(contents(original) == [0, 1, 2, 3, 4, 5])
        original.removeFirst()
        original.prepend(-1)
        original.insert(50, at: 3)
        #expect(contents(original) == [-1, 1, 2, 50, 3, 4, 5])
        #expect(contents(copy) == [99, 1, 2, 3, 4, 5, 7])
        var emptied = copy
        emptied.removeAll()
        #expect(emptied.isEmpty && emptied.first == nil)
        #expect(contents(copy) == [99, 1, 2, 3, 4, 5, 7])
    }
}
