import Testing

@testable import Herald
@testable import HeraldCore

/// The reader's receive buffer, read by read, without a socket: notifications' bytes never change under them.
@Suite struct ReceiveBufferTests {
    /// "Reads" `bytes` into the buffer as the reader does: room first, then the bytes written into it.
    func read(_ bytes: [UInt8], into buffer: inout ReceiveBuffer) {
        buffer.prepareForRead()
        let free = buffer.free
        #expect(free.count >= bytes.count, "room for \(free.count) bytes, read \(bytes.count)")
        free.copyBytes(from: bytes)
        buffer.didRead(bytes.count)
    }

    func bytes(_ shared: NotificationBytes, _ range: Range<Int>) -> [UInt8] {
        Array(UnsafeRawBufferPointer(start: shared.base + range.lowerBound, count: range.count))
    }

    /// Whether `shared` holds `expected` at `range`; a Bool, so a failure does not print 64 KiB of bytes.
    func holds(_ shared: NotificationBytes, _ range: Range<Int>, _ expected: [UInt8]) -> Bool {
        bytes(shared, range) == expected
    }

    func pattern(_ count: Int, _ seed: UInt8) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ Int(seed)) }
    }

    @Test func aLargeReadIsSharedInPlaceAndASmallOneCopied() {
        var buffer = ReceiveBuffer()
        let large = pattern(ReceiveBuffer.sharedMinimum, 1)
        read(large, into: &buffer)
        let (first, firstRange) = buffer.take(large.count)
        #expect(first.capacity == ReceiveBuffer.standardCapacity)
        #expect(holds(first, firstRange, large))

        let small = pattern(100, 2)
        read(small, into: &buffer)
        let (second, secondRange) = buffer.take(small.count)
        // A copy sized for the read, so keeping one of its notifications keeps 256 bytes, not 64 KiB.
        #expect(second !== first)
        #expect(second.capacity == 256)
        #expect(holds(second, secondRange, small))
        #expect(holds(first, firstRange, large))
    }

    @Test func readsGoPastBytesThatNotificationsStillHold() {
        var buffer = ReceiveBuffer()
        let one = pattern(30_000, 3)
        read(one, into: &buffer)
        let (held, heldRange) = buffer.take(one.count)
        // `held` stands for a notification not yet consumed: the next read must not overwrite its bytes.
        let two = pattern(30_000, 4)
        read(two, into: &buffer)
        let (next, nextRange) = buffer.take(two.count)
        #expect(holds(held, heldRange, one))
        #expect(holds(next, nextRange, two))
        #expect(next === held, "room was left after the held bytes, so the read went there")
        #expect(nextRange.lowerBound == heldRange.upperBound)

        // Too little room is left past both: the third read goes into another buffer, the first stays as it was.
        let three = pattern(20_000, 5)
        read(three, into: &buffer)
        let (other, otherRange) = buffer.take(three.count)
        #expect(other !== held)
        #expect(holds(other, otherRange, three))
        #expect(holds(held, heldRange, one))
        #expect(holds(held, nextRange, two))
    }

    @Test func aBufferNoLongerHeldIsReadIntoAgainFromTheStart() {
        var buffer = ReceiveBuffer()
        let one = pattern(40_000, 6)
        read(one, into: &buffer)
        var (taken, range): (NotificationBytes?, Range<Int>) = buffer.take(one.count)
        let identity = ObjectIdentifier(taken!)
        #expect(range.lowerBound == 0)
        taken = nil  // every notification of the read is gone
        let two = pattern(40_000, 7)
        read(two, into: &buffer)
        let (again, againRange) = buffer.take(two.count)
        #expect(ObjectIdentifier(again) == identity)
        #expect(againRange == 0..<two.count)
        #expect(holds(again, againRange, two))
    }

    @Test func theStartOfAFrameIsCarriedIntoTheNextBuffer() {
        var buffer = ReceiveBuffer()
        let frames = pattern(50_000, 8)
        let begun = pattern(300, 9)
        read(frames + begun, into: &buffer)
        let (held, heldRange) = buffer.take(frames.count)
        buffer.expect(frameOf: 20_000)
        // Held, with under 20,000 bytes of room left: the frame's start moves to another buffer, which has room for
        // the rest of it.
        let rest = pattern(19_700, 10)
        read(rest, into: &buffer)
        let carried = Array(buffer.unrouted) == begun + rest
        #expect(carried, "the frame's start and its rest, in order")
        let (next, nextRange) = buffer.take(20_000)
        #expect(next !== held)
        #expect(holds(next, nextRange, begun + rest))
        #expect(holds(held, heldRange, frames))
    }

    @Test func aFrameLargerThanTheBufferGetsOneOfItsSizeThenTheStandardOneAgain() {
        var buffer = ReceiveBuffer()
        let size = ReceiveBuffer.standardCapacity + 5_000
        let frame = pattern(size, 11)
        read(Array(frame[..<60_000]), into: &buffer)
        buffer.expect(frameOf: size)
        read(Array(frame[60_000...]), into: &buffer)
        var (big, range): (NotificationBytes?, Range<Int>) = buffer.take(size)
        #expect(big!.capacity >= size)
        #expect(holds(big!, range, frame))
        big = nil
        let after = pattern(1_000, 12)
        read(after, into: &buffer)
        #expect(buffer.free.count + after.count == ReceiveBuffer.standardCapacity)
    }
}
