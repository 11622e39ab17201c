import HeraldWire

/// How the reader routes a read's notifications to the subscriptions, under the connection's lock.
extension ConnectionState {
    /// Calls `body` on every subscription, in place.
    ///
    /// A loop over indices rather than over `subscriptions.indices`, which holds the dictionary and so makes every
    /// change in the loop copy it whole.
    @inline(__always)
    mutating func forEachSubscription(_ body: (inout Subscription) -> Void) {
        var index = subscriptions.startIndex
        while index != subscriptions.endIndex {
            body(&subscriptions.values[index])
            subscriptions.formIndex(after: &index)
        }
    }

    /// Delivers a live post to every live subscription whose pattern matches `name`, made once with `make` and
    /// shared.
    ///
    /// Always inlined, with the loop it runs, so `make` is inlined too: called through the closure, the notification
    /// was built in the closure's context and copied out of it, and the copy's loads waited on the stores (perf
    /// annotate, herald-bench fan-out 100: the closure was 4.5 % of the samples, three quarters on one load).
    ///
    /// - Returns: whether a subscription now has losses its stream has not been told about.
    @inline(__always)
    mutating func deliverLive(
        named name: UnsafeRawBufferPointer,
        _ noticeSender: NoticeSender,
        _ make: () -> HeraldNotification
    ) -> Bool {
        var notification: HeraldNotification?
        var hasUnreportedDrops = false
        // The usual connection has one subscription: its notification is made straight into place, without the shared
        // copy and the extra retain and release that sharing costs.
        let single = subscriptions.count == 1
        forEachSubscription { subscription in
            guard subscription.matchesLive(name) else { return }
            subscription.touched = true
            if subscription.canStage {
                if single {
                    subscription.staged.append(make())
                } else {
                    if notification == nil { notification = make() }
                    subscription.staged.append(notification!)
                }
            } else {
                if notification == nil { notification = make() }
                subscription.commitStaged(noticeSender)
                subscription.deliver(notification!, noticeSender: noticeSender)
                hasUnreportedDrops = hasUnreportedDrops || subscription.unreported != nil
            }
        }
        return hasUnreportedDrops
    }

    /// Makes room for `count` staged notifications in the staging array of a connection's only subscription, which
    /// every live post of the read goes to: grown one append at a time, the array of a read of 336 notifications
    /// (herald-bench fan-out 100) was reallocated three times and its elements copied each time, 2 % of the samples.
    /// A connection with several subscriptions does not know how the read divides among them, and its streams get
    /// less each.
    mutating func reserveStaging(_ count: Int) {
        guard subscriptions.count == 1, count > NotificationBuffer.spareCapacity else { return }
        let index = subscriptions.startIndex
        guard subscriptions.values[index].staged.capacity < count else { return }
        subscriptions.values[index].staged.reserveCapacity(count)
    }

    /// Stages the live posts at the start of a read for a connection's only subscription, straight into its staging
    /// array: the usual read of a fan-out consumer, all live posts of one name.
    ///
    /// What ``deliverLive(named:_:_:)`` does for each, with the subscription looked up once rather than per frame,
    /// and a name equal to the frame before's neither checked nor matched again: that lookup, the name check and the
    /// match were about a fifth of the library's routing cost at herald-bench fan-out 100.
    ///
    /// - Parameters:
    ///   - bytes: the read's frames, from the start of the bytes notifications point into.
    ///   - next: where the first frame starts; on return, the first frame this did not route (not a live `NOTIFY`
    ///     read in place), for the general loop to go on from.
    ///   - make: the notification of a frame.
    /// - Returns: whether anything was staged.
    @inline(__always)
    mutating func stageLiveRun(
        in bytes: UnsafeRawBufferPointer,
        from next: inout Int,
        _ make: (NotifyView) -> HeraldNotification
    ) -> Bool {
        guard subscriptions.count == 1 else { return false }
        let index = subscriptions.startIndex
        guard subscriptions.values[index].isLive, subscriptions.values[index].canStage else { return false }
        var staged: [HeraldNotification] = []
        swap(&staged, &subscriptions.values[index].staged)
        defer { swap(&staged, &subscriptions.values[index].staged) }
        // Its patterns, copied out once: reading them through the dictionary copied the whole subscription per new
        // name, a retain and a release of each of its references (perf, herald-bench named: 4.7 % of the samples).
        let subscription = subscriptions.values[index]
        var lastName = UnsafeRawBufferPointer(start: nil, count: 0)
        var lastMatched = false
        let before = staged.count
        while next < bytes.count {
            var sameName = false
            let view = NotifyView(frameIn: bytes, at: next) { name in
                sameName = Bytes.equal(name, lastName)
                return sameName || Name.isPlainASCIIName(name)
            }
            guard let notify = view, notify.subscription == 0 else { break }
            if !sameName {
                lastName = UnsafeRawBufferPointer(rebasing: bytes[notify.name])
                lastMatched = subscription.matchesLive(lastName)
            }
            if lastMatched { staged.append(make(notify)) }
            next = notify.payload.upperBound
        }
        guard staged.count > before else { return false }
        subscriptions.values[index].touched = true
        return true
    }

    /// Puts every subscription's staged notifications in its stream; the reader does this before routing anything
    /// but a live `NOTIFY`, and at the end of each batch, so the order of the stream is the order of the frames.
    ///
    /// - Returns: whether a subscription now has losses its stream has not been told about.
    mutating func commitStaged(_ noticeSender: NoticeSender) -> Bool {
        var hasUnreportedDrops = false
        forEachSubscription { subscription in
            guard !subscription.staged.isEmpty else { return }
            subscription.commitStaged(noticeSender)
            hasUnreportedDrops = hasUnreportedDrops || subscription.unreported != nil
        }
        return hasUnreportedDrops
    }

    /// Delivers a retained value to the subscription or `GET` request `id` it answers; one withdrawn meanwhile gets
    /// nothing, and a stream that has the value through an earlier pattern does not get it again.
    ///
    /// - Returns: whether the subscription now has losses its stream has not been told about.
    mutating func deliverRetained(
        _ notification: HeraldNotification,
        to id: UInt32,
        _ noticeSender: NoticeSender
    ) -> Bool {
        var key = id
        if subscriptions[id] == nil, let place = laterPatterns[id], let stream = subscriptions[place.stream] {
            let delivered = notification.withNameBytes { name in
                stream.earlierPatternMatches(UnsafeRawBufferPointer(name), before: place.index)
            }
            if delivered { return false }
            key = place.stream
        }
        if subscriptions[key] != nil {
            subscriptions[key]!.deliver(notification, noticeSender: noticeSender)
            subscriptions[key]!.touched = true
            return subscriptions[key]!.unreported != nil
        }
        if pending[id]?.kind == .get {
            pending[id]!.retained = notification
        }
        return false
    }
}
