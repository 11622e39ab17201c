import HeraldWire
import Testing

@testable import Herald
@testable import HeraldCore

/// The reader stages a batch's live notifications and commits them in one step: the stream must end up exactly as
/// if each had been offered alone.
@Suite struct SubscriptionStagingTests {
    let base = SubscriptionTests()

    /// What the stream holds, and what is left unreported, after `sequences` are delivered one by one.
    func offeredAlone(
        _ policy: BufferingPolicy,
        _ sequences: ClosedRange<UInt64>
    ) async throws -> ([String], DropRange?) {
        var (subscription, stream) = try base.makeSubscription(policy)
        for sequence in sequences {
            subscription.deliver(base.post(sequence), noticeSender: base.noticeSender)
        }
        let unreported = subscription.unreported
        return (await base.drain(subscription, stream), unreported)
    }

    /// The same, with the notifications staged and committed together.
    func stagedAndCommitted(
        _ policy: BufferingPolicy,
        _ sequences: ClosedRange<UInt64>
    ) async throws -> ([String], DropRange?) {
        var (subscription, stream) = try base.makeSubscription(policy)
        for sequence in sequences {
            #expect(subscription.canStage)
            subscription.staged.append(base.post(sequence))
        }
        subscription.commitStaged(base.noticeSender)
        #expect(subscription.staged.isEmpty)
        let unreported = subscription.unreported
        return (await base.drain(subscription, stream), unreported)
    }

    @Test(arguments: [
        (BufferingPolicy.bufferingOldest(8), UInt64(5)),
        (.bufferingOldest(5), 5),
        (.bufferingOldest(2), 5),
        (.bufferingOldest(1), 3),
        (.bufferingNewest(8), 5),
        (.bufferingNewest(2), 6),
        (.unbounded, 20),
    ])
    func aCommittedBatchEndsAsIfEachWasOfferedAlone(policy: BufferingPolicy, count: UInt64) async throws {
        let alone = try await offeredAlone(policy, 1...count)
        let staged = try await stagedAndCommitted(policy, 1...count)
        #expect(staged.0 == alone.0)
        #expect(staged.1 == alone.1)
    }

    @Test func aBatchThatFitsGoesInWhole() async throws {
        var (subscription, stream) = try base.makeSubscription(.bufferingOldest(4))
        subscription.deliver(base.post(1), noticeSender: base.noticeSender)
        for sequence: UInt64 in 2...4 { subscription.staged.append(base.post(sequence)) }
        subscription.commitStaged(base.noticeSender)
        #expect(subscription.enqueued == 4)
        #expect(subscription.unreported == nil)
        #expect(await base.drain(subscription, stream) == ["n.1", "n.2", "n.3", "n.4"])
    }

    @Test func nothingIsStagedWhileALossWaitsForItsNotice() throws {
        var (subscription, _) = try base.makeSubscription(.bufferingOldest(1))
        subscription.deliver(base.post(1), noticeSender: base.noticeSender)
        subscription.deliver(base.post(2), noticeSender: base.noticeSender)
        #expect(!subscription.canStage)
    }
}

/// A batch's array goes round: staged by the reader, queued in the stream, handed to the consumer, and given back
/// empty for a later batch, so a stream fed one notification per read does not allocate per notification.
@Suite struct BatchRecyclingTests {
    let base = SubscriptionTests()

    @Test func anArrayGivenBackComesRoundAgainAndTheOrderHolds() async throws {
        var (subscription, stream) = try base.makeSubscription(.bufferingOldest(100))
        let buffer = stream.buffer
        // Marked by its room, which no batch of one notification gets when its array is made for it, and known by
        // its storage: a copy made on the way (an array emptied while shared gets new storage) would not be it.
        var used: [HeraldNotification] = []
        used.reserveCapacity(50)
        let marked = used.withUnsafeBufferPointer { UnsafeRawPointer($0.baseAddress) }
        var sequences: [UInt64] = []
        var cameRound = false
        for sequence: UInt64 in 1...10 {
            subscription.staged.append(base.post(sequence))
            subscription.commitStaged(base.noticeSender)
            buffer.flush()
            var batch = try #require(await buffer.take(recycling: consume used))
            sequences += batch.map(\.sequence)
            let storage = batch.withUnsafeBufferPointer { UnsafeRawPointer($0.baseAddress) }
            cameRound = cameRound || (batch.capacity >= 50 && storage == marked)
            batch.removeAll(keepingCapacity: true)
            used = consume batch
        }
        #expect(sequences == Array(1...10))
        #expect(cameRound)
    }

    @Test func aLargeBatchIsNotKept() async throws {
        let (_, stream) = try base.makeSubscription(.bufferingOldest(1000))
        let buffer = stream.buffer
        var batch = (1...UInt64(NotificationBuffer.spareCapacity + 1)).map { base.post($0) }
        _ = buffer.yield(contentsOf: &batch)
        var taken = try #require(await buffer.take())
        #expect(taken.capacity > NotificationBuffer.spareCapacity)
        taken.removeAll(keepingCapacity: true)
        var small = [base.post(1000)]
        _ = buffer.yield(contentsOf: &small)
        let next = try #require(await buffer.take(recycling: consume taken))
        #expect(next.map(\.sequence) == [1000])
        // The next batch swaps itself in for the array the buffer holds now, and gets that array back: not the
        // large one.
        var probe = [base.post(1001)]
        _ = buffer.yield(contentsOf: &probe)
        #expect(probe.isEmpty)
        #expect(probe.capacity <= NotificationBuffer.spareCapacity)
    }

    @Test func aReadIsStagedForTheOnlySubscriptionWithRoomForAllOfIt() throws {
        var state = ConnectionState()
        let (only, _) = try base.makeSubscription(.bufferingOldest(1000))
        state.subscriptions[1] = only
        state.reserveStaging(336)
        #expect(state.subscriptions[1]!.staged.capacity >= 336)
        // With two subscriptions nobody knows how the read divides: nothing is reserved.
        let (other, _) = try base.makeSubscription(.bufferingOldest(1000))
        state.subscriptions[2] = other
        state.reserveStaging(500)
        #expect(state.subscriptions[2]!.staged.capacity < 500)
    }
}
