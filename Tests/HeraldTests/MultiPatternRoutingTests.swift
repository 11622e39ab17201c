import HeraldWire
import Testing

@testable import Herald

/// How the reader routes to a stream of several patterns, event by event, without a daemon: the orders of frames
/// that a real daemon produces only by chance of timing.
@Suite struct MultiPatternRoutingTests {
    let base = SubscriptionTests()

    /// A connection's state holding one stream of `patterns`, registered under ids 1, 2, ..., none live yet.
    func state(_ patterns: [String]) throws -> (ConnectionState, SubscriptionTests.Reader) {
        let buffer = NotificationBuffer(policy: .bufferingOldest(100))
        var subscription = Subscription(
            patterns: try patterns.map { try Pattern($0) },
            continuation: buffer,
            policy: .bufferingOldest(100)
        )
        subscription.ids = (1...UInt32(patterns.count)).map { $0 }
        var state = ConnectionState()
        state.subscriptions[1] = subscription
        for index in 1..<patterns.count {
            state.laterPatterns[UInt32(index + 1)] = PatternOfStream(stream: 1, index: index)
        }
        return (state, SubscriptionTests.Reader(buffer: buffer))
    }

    func notification(_ name: String, _ sequence: UInt64, retained: Bool) -> HeraldNotification {
        HeraldNotification(
            name: name,
            payload: [],
            sequence: sequence,
            timeNanoseconds: 0,
            sender: HeraldNotification.Sender(pid: 1, uid: 2, gid: 3),
            isRetained: retained
        )
    }

    /// Routes a live post as the reader does: staged, then committed.
    func live(_ state: inout ConnectionState, _ name: String, _ sequence: UInt64) {
        var bytes = Array(name.utf8)
        bytes.withUnsafeMutableBytes { raw in
            _ = state.deliverLive(named: UnsafeRawBufferPointer(raw), base.noticeSender) {
                notification(name, sequence, retained: false)
            }
        }
        _ = state.commitStaged(base.noticeSender)
    }

    /// What the stream holds, as "name sequence" with an R for a retained value.
    func contents(_ state: ConnectionState, _ reader: SubscriptionTests.Reader) async -> [String] {
        let subscription = state.subscriptions[1]!
        subscription.continuation.finish()
        var reader = reader
        var names: [String] = []
        while let next = await reader.next() {
            names.append("\(next.name) \(next.sequence)\(next.isRetained ? " R" : "")")
        }
        return names
    }

    @Test func livePostsFollowOnlyThePatternsAlreadyAcknowledged() async throws {
        var (state, reader) = try state(["a.*", "b.*"])
        live(&state, "a.x", 1)  // before any ACK: processed before the subscriptions existed
        state.subscriptionAcknowledged(1)
        live(&state, "a.x", 2)
        live(&state, "b.x", 3)  // b.* is not live yet
        state.subscriptionAcknowledged(2)
        live(&state, "b.x", 4)
        live(&state, "a.b", 5)
        #expect(await contents(state, reader) == ["a.x 2", "b.x 4", "a.b 5"])
    }

    @Test func aValueRetainedBetweenTwoPatternsIsNotReplayedByTheLaterOne() async throws {
        // a.* is live; a.b is posted (and retained) before the daemon processes the SUBSCRIBE of a.b, whose replay
        // then carries the same post: the stream has it already, through a.*.
        var (state, reader) = try state(["a.*", "a.b", "c"])
        _ = state.deliverRetained(notification("a.z", 1, retained: true), to: 1, base.noticeSender)
        state.subscriptionAcknowledged(1)
        live(&state, "a.b", 7)
        _ = state.deliverRetained(notification("a.b", 7, retained: true), to: 2, base.noticeSender)
        state.subscriptionAcknowledged(2)
        _ = state.deliverRetained(notification("c", 3, retained: true), to: 3, base.noticeSender)
        state.subscriptionAcknowledged(3)
        live(&state, "c", 8)
        live(&state, "a.b", 9)
        #expect(await contents(state, reader) == ["a.z 1 R", "a.b 7", "c 3 R", "c 8", "a.b 9"])
    }

    @Test func anAcknowledgementOfAWithdrawnStreamChangesNothing() throws {
        var (state, _) = try state(["a", "b"])
        _ = state.removeSubscription(1)
        #expect(state.laterPatterns.isEmpty)
        state.subscriptionAcknowledged(2)
        state.subscriptionAcknowledged(1)
        #expect(state.subscriptions.isEmpty)
    }
}
