import HeraldBroker
import Testing

/// heraldd's wake-up moderation, turn by turn.
@Suite struct WakeModerationTests {
    /// A short turn: it ends well within the busy window after the wait returned.
    let short: UInt64 = 20_000
    /// A long turn, past the busy window.
    let long: UInt64 = 200_000

    /// One turn; outside `#expect`, which cannot take a mutating call.
    func turn(_ moderation: inout WakeModeration, frames: Int, reads: Int, sinceWake: UInt64) -> Bool {
        moderation.turnEnded(frames: frames, reads: reads, sinceWake: sinceWake)
    }

    @Test func postsArrivingOnePerReadAreLetGatherAfterBusyShortTurns() {
        var moderation = WakeModeration()
        // Nine frames in nine reads: a client writing one post per send.
        #expect(turn(&moderation, frames: 9, reads: 9, sinceWake: short))
        #expect(moderation.isTrickling)
    }

    @Test func batchedInputIsNeverHeldBack() {
        var moderation = WakeModeration()
        // A client that coalesces its posts: hundreds of frames in a couple of reads, turn after turn.
        for _ in 0..<100 {
            #expect(!turn(&moderation, frames: 300, reads: 2, sinceWake: short))
        }
        #expect(!moderation.isTrickling)
    }

    @Test func aTrickleIsRememberedThroughTheLargeReadsItsOwnSleepsMake() {
        var moderation = WakeModeration()
        #expect(turn(&moderation, frames: 10, reads: 10, sinceWake: short))
        // After the sleep the posts come in one large read: still the same trickle, still moderated.
        #expect(turn(&moderation, frames: 90, reads: 1, sinceWake: short))
        // A long turn is not held (nobody waits to be woken), but does not end the trickle either.
        #expect(!turn(&moderation, frames: 200, reads: 1, sinceWake: long))
        #expect(turn(&moderation, frames: 80, reads: 1, sinceWake: short))
    }

    @Test func theTrickleEndsWithTheLoad() {
        var moderation = WakeModeration()
        #expect(turn(&moderation, frames: 10, reads: 10, sinceWake: short))
        // A lone post: the load is over, and it is never held.
        #expect(!turn(&moderation, frames: 1, reads: 1, sinceWake: short))
        #expect(!moderation.isTrickling)
        // Batched input after that is not held either.
        #expect(!turn(&moderation, frames: 90, reads: 1, sinceWake: short))
    }

    @Test func aLonePostIsNeverHeld() {
        var moderation = WakeModeration()
        for _ in 0..<10 {
            #expect(!turn(&moderation, frames: 1, reads: 1, sinceWake: 1_000))
        }
    }
}
