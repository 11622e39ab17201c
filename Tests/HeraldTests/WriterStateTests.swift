import HeraldWire
import Testing

@testable import Herald
@testable import HeraldCore

/// The outgoing buffer's state, event by event, without a socket.
@Suite struct WriterStateTests {
    static func post(_ bytes: Int) -> Frame {
        .post(Frame.Post(request: 0, name: "bound.test", payload: [UInt8](repeating: 7, count: bytes), retain: false))
    }

    @Test func anEmptyBufferTakesAFrameLargerThanItsBoundAndAFullOneRefusesAPostPastIt() {
        var state = WriterState()
        let large = Self.post(WriterState.capacity * 2)
        #expect(state.hasRoom(for: large.encodedSize))
        state.append(large, size: large.encodedSize)
        #expect(!state.hasRoom(for: 1))

        var filling = WriterState()
        let frame = Self.post(100)
        var queued = 0
        while filling.hasRoom(for: frame.encodedSize) {
            filling.append(frame, size: frame.encodedSize)
            queued += 1
        }
        #expect(filling.pending.count <= WriterState.capacity)
        #expect(filling.pending.count + frame.encodedSize > WriterState.capacity)
        #expect(queued == WriterState.capacity / frame.encodedSize)
    }

    @Test func appendedFramesAreTheirEncodingsBackToBackInCallOrder() {
        var state = WriterState()
        let first = Self.post(3)
        let second = Frame.ping(Frame.Ping(request: 9))
        state.append(first, size: first.encodedSize)
        state.append(second, size: second.encodedSize)
        #expect(state.pending == first.encoded() + second.encoded())
    }

    @Test func finishingEmptiesTheBuffersGivesBackLargeOnesAndSaysWhetherToEnd() {
        var state = WriterState()
        state.owner = .reader
        state.outgoing = [UInt8](repeating: 1, count: WriterState.idleCapacity * 4)
        state.written = state.outgoing.count
        state.blockedSince = 42
        let reason = HeraldError(.disconnected, "released")
        state.endWhenWritten = reason
        let finished = state.finishWriting()
        #expect(state.owner == .none)
        #expect(state.written == 0)
        #expect(state.outgoing.isEmpty)
        #expect(state.outgoing.capacity <= WriterState.idleCapacity)
        #expect(state.blockedSince == 0)
        #expect(finished.end?.message == reason.message)
        #expect(finished.waiters.isEmpty)

        var small = WriterState()
        small.owner = .caller
        small.outgoing = [1, 2, 3]
        small.written = 3
        #expect(small.finishWriting().end == nil)
        // A small buffer is kept for the next post: no allocation per lone post.
        #expect(small.outgoing.isEmpty && small.outgoing.capacity >= 3)
    }

    @Test func aFrameIsLoneBeforeTheFirstSendAndOnceTheBurstGapHasPassedSinceTheLastOne() {
        var state = WriterState()
        #expect(state.isLone(at: 1_000))
        state.lastSentAt = 1_000_000
        #expect(!state.isLone(at: 1_000_000))
        #expect(!state.isLone(at: 1_000_000 + WriterState.burstGapNanoseconds - 1))
        #expect(state.isLone(at: 1_000_000 + WriterState.burstGapNanoseconds))
    }
}
