import HeraldWire
import Testing

@testable import Herald
@testable import HeraldCore

/// The loss accounting of one subscription's stream, event by event, without a daemon.
@Suite struct SubscriptionTests {
    let noticeSender = NoticeSender(sender: HeraldNotification.Sender(pid: 99, uid: 1000, gid: 100))

    /// Reads a buffer one notification at a time, as the library's iterator does.
    struct Reader {
        let buffer: NotificationBuffer
        var pending: [HeraldNotification] = []

        mutating func next() async -> HeraldNotification? {
            if pending.isEmpty { pending = await buffer.take() ?? [] }
            return pending.isEmpty ? nil : pending.removeFirst()
        }
    }

    func makeSubscription(_ policy: BufferingPolicy) throws -> (Subscription, Reader) {
        let buffer = NotificationBuffer(policy: policy)
        var subscription = Subscription(patterns: [try Pattern("**")], continuation: buffer, policy: policy)
        subscription.livePatterns = 1
        return (subscription, Reader(buffer: buffer))
    }

    func post(_ sequence: UInt64) -> HeraldNotification {
        HeraldNotification(
            name: "n.\(sequence)",
            payload: [],
            sequence: sequence,
            timeNanoseconds: 0,
            sender: HeraldNotification.Sender(pid: 1, uid: 2, gid: 3),
            isRetained: false
        )
    }

    /// Reads what the stream holds now, after ending it.
    func drain(_ subscription: Subscription, _ stream: Reader) async -> [String] {
        subscription.continuation.finish()
        var names: [String] = []
        var reader = stream
        while let notification = await reader.next() {
            if case .dropped(let count, let first, let last) = notification.notice {
                names.append("dropped \(count) \(first)-\(last)")
            } else {
                names.append(notification.name)
            }
        }
        return names
    }

    @Test func bufferingOldestPutsTheNoticeAtTheGap() async throws {
        var (subscription, stream) = try makeSubscription(.bufferingOldest(2))
        for sequence: UInt64 in 1...5 {
            subscription.deliver(post(sequence), noticeSender: noticeSender)
        }
        #expect(subscription.unreported == DropRange(count: 3, firstSequence: 3, lastSequence: 5))
        var iterator = stream
        #expect(await iterator.next()?.sequence == 1)
        #expect(await iterator.next()?.sequence == 2)
        // What HeraldNotifications' iterator counts for the reader.
        subscription.consumed.taken.add(2, ordering: .relaxed)
        // Room again: the notice goes in first, then the post.
        subscription.deliver(post(6), noticeSender: noticeSender)
        #expect(subscription.unreported == nil)
        subscription.continuation.finish()
        #expect(await iterator.next()?.notice == .dropped(count: 3, firstSequence: 3, lastSequence: 5))
        #expect(await iterator.next()?.sequence == 6)
        #expect(await iterator.next() == nil)
    }

    @Test func aPostThatArrivesWhileTheNoticeDoesNotFitJoinsTheGap() async throws {
        var (subscription, stream) = try makeSubscription(.bufferingOldest(1))
        subscription.deliver(post(1), noticeSender: noticeSender)
        subscription.deliver(post(2), noticeSender: noticeSender)
        subscription.deliver(post(3), noticeSender: noticeSender)
        #expect(subscription.unreported == DropRange(count: 2, firstSequence: 2, lastSequence: 3))
        #expect(await drain(subscription, stream) == ["n.1"])
    }

    @Test func daemonDropsAreReportedAtOnceWhenThereIsRoom() async throws {
        var (subscription, stream) = try makeSubscription(.bufferingOldest(10))
        subscription.deliver(post(1), noticeSender: noticeSender)
        subscription.daemonDropped(DropRange(count: 4, firstSequence: 2, lastSequence: 5), noticeSender: noticeSender)
        subscription.deliver(post(6), noticeSender: noticeSender)
        #expect(await drain(subscription, stream) == ["n.1", "dropped 4 2-5", "n.6"])
    }

    @Test func daemonAndLocalDropsAccumulateIntoOneNotice() async throws {
        var (subscription, stream) = try makeSubscription(.bufferingOldest(1))
        subscription.deliver(post(1), noticeSender: noticeSender)
        subscription.daemonDropped(DropRange(count: 4, firstSequence: 2, lastSequence: 5), noticeSender: noticeSender)
        subscription.deliver(post(6), noticeSender: noticeSender)
        #expect(subscription.unreported == DropRange(count: 5, firstSequence: 2, lastSequence: 6))
        var iterator = stream
        #expect(await iterator.next()?.sequence == 1)
        subscription.consumed.taken.add(1, ordering: .relaxed)
        subscription.reportDrops(noticeSender)
        subscription.continuation.finish()
        #expect(await iterator.next()?.notice == .dropped(count: 5, firstSequence: 2, lastSequence: 6))
        #expect(await iterator.next() == nil)
    }

    @Test func anOverflowEpisodeGetsOneNoticeNotOnePerFreeSlot() async throws {
        var (subscription, stream) = try makeSubscription(.bufferingOldest(4))
        var iterator = stream
        for sequence: UInt64 in 1...10 {
            subscription.deliver(post(sequence), noticeSender: noticeSender)
        }
        // The consumer takes one at a time while posts keep coming: no notice until it has drained to half.
        var taken: [String] = []
        for sequence: UInt64 in 11...12 {
            if let next = await iterator.next() { taken.append(next.name) }
            subscription.consumed.taken.add(1, ordering: .relaxed)
            subscription.deliver(post(sequence), noticeSender: noticeSender)
        }
        #expect(taken == ["n.1", "n.2"])
        // Drained to half when 12 came: one notice for 5 to 11, then 12 and what follows.
        #expect(subscription.unreported == nil)
        subscription.deliver(post(13), noticeSender: noticeSender)
        var rest = ["n.3", "n.4"]  // taken in the reader's batch already
        rest += await drain(subscription, stream).filter { !rest.contains($0) }
        #expect(rest == ["n.3", "n.4", "dropped 7 5-11", "n.12", "n.13"])
    }

    @Test func bufferingNewestCountsEveryEvictionIncludingNotices() async throws {
        var (subscription, stream) = try makeSubscription(.bufferingNewest(2))
        for sequence: UInt64 in 1...6 {
            subscription.deliver(post(sequence), noticeSender: noticeSender)
        }
        // Every post went in, evicting the oldest: 1 to 4 are gone.
        #expect(subscription.unreported == DropRange(count: 4, firstSequence: 1, lastSequence: 4))
        subscription.reportDrops(noticeSender)
        // The notice went in and evicted 5, which the next notice will report.
        #expect(subscription.unreported == DropRange(count: 1, firstSequence: 5, lastSequence: 5))
        subscription.deliver(post(7), noticeSender: noticeSender)
        subscription.reportDrops(noticeSender)
        // 7 evicted 6; the second notice evicted the first one and took over its count.
        #expect(subscription.unreported == DropRange(count: 4, firstSequence: 1, lastSequence: 4))
        #expect(await drain(subscription, stream) == ["n.7", "dropped 2 5-6"])
    }

    @Test func noticesCarryTheDaemonAsSender() {
        let notice = noticeSender.notice(for: DropRange(count: 2, firstSequence: 7, lastSequence: 9))
        #expect(notice.name == "herald.dropped")
        #expect(notice.sequence == 9)
        #expect(notice.sender == HeraldNotification.Sender(pid: 99, uid: 1000, gid: 100))
        #expect(notice.payload == Array(#"{"count":2,"firstSequence":7,"lastSequence":9}"#.utf8))
        #expect(notice.isRetained == false)
    }
}
