import HeraldWire
import Testing

@testable import Herald
@testable import HeraldCore

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

/// The reader's fast path for a connection's only subscription, frame by frame against what the general path does.
@Suite struct LiveRunTests {
    let base = SubscriptionTests()

    func frames(_ specs: [(name: String, subscription: UInt32)]) -> NotificationBytes {
        var bytes: [UInt8] = []
        for (index, spec) in specs.enumerated() {
            Frame.notify(
                Frame.Notify(
                    sequence: UInt64(index + 1),
                    time: 0,
                    pid: 1,
                    uid: 2,
                    gid: 3,
                    subscription: spec.subscription,
                    retained: spec.subscription != 0,
                    name: spec.name,
                    payload: [UInt8(index)]
                )
            ).encode(into: &bytes)
        }
        return bytes.withUnsafeBytes { NotificationBytes(copying: $0) }
    }

    func state(_ pattern: String) throws -> ConnectionState {
        var (subscription, _) = try base.makeSubscription(.bufferingOldest(100))
        subscription = Subscription(
            patterns: [try Pattern(pattern)],
            continuation: subscription.continuation,
            policy: .bufferingOldest(100)
        )
        subscription.livePatterns = 1
        var state = ConnectionState()
        state.subscriptions[1] = subscription
        return state
    }

    @Test func aRunOfLivePostsIsStagedUntilTheFirstFrameItDoesNotRead() throws {
        // Runs of one name, names that do not match, then a name the in-place reader leaves to the decoder (not
        // ASCII) and a live post after it, which the general loop routes.
        let shared = frames([
            ("a.x", 0), ("a.x", 0), ("b.y", 0), ("b.y", 0), ("a.z", 0), ("a.x", 0), ("a.é", 0), ("a.x", 0),
        ])
        var state = try state("a.*")
        let bytes = UnsafeRawBufferPointer(start: shared.base, count: shared.count)
        var next = 0
        let staged = state.stageLiveRun(in: bytes, from: &next) { HeraldNotification($0, in: shared) }
        #expect(staged)
        let subscription = state.subscriptions[1]!
        #expect(subscription.staged.map(\.name) == ["a.x", "a.x", "a.z", "a.x"])
        #expect(subscription.staged.map(\.sequence) == [1, 2, 5, 6])
        #expect(subscription.touched)
        // It stopped at the frame named a.é, the seventh.
        var start = 0
        for _ in 0..<6 { start += 4 + Int(bytes.loadUnaligned(fromByteOffset: start, as: UInt32.self)) }
        #expect(next == start)
    }

    @Test func aRetainedValueOrAnotherSubscriptionLeavesItToTheGeneralLoop() throws {
        let shared = frames([("a.x", 7), ("a.x", 0)])
        var state = try state("a.*")
        let bytes = UnsafeRawBufferPointer(start: shared.base, count: shared.count)
        var next = 0
        #expect(!state.stageLiveRun(in: bytes, from: &next) { HeraldNotification($0, in: shared) })
        #expect(next == 0)
        var other = state
        other.subscriptions[2] = other.subscriptions[1]
        let live = frames([("a.x", 0)])
        let liveBytes = UnsafeRawBufferPointer(start: live.base, count: live.count)
        #expect(!other.stageLiveRun(in: liveBytes, from: &next) { HeraldNotification($0, in: live) })
        #expect(next == 0)
    }
}
