import HeraldWire

extension Broker {
    /// Retained values still to be sent for one `SUBSCRIBE` with a wildcard pattern, then its `ACK`.
    ///
    /// Replay is back-pressured: the values go into the connection's queue a few at a time, as it drains
    /// (`feedReplay`), never more than half the queue's bound ahead of the client, instead of all at once as frames
    /// that are never dropped. Meanwhile the connection is not read, and live posts for it wait in its `held` queue,
    /// bounded and under its overflow policy like its own queue; they follow the `ACK` (wire.md, "Subscriptions and
    /// delivery": retained values first, then the `ACK`, then live posts, with no gap).
    struct Replay {
        let subscription: UInt32
        let pattern: Pattern
        /// The last sequence number assigned when the `SUBSCRIBE` was processed, which its `ACK` carries. A value
        /// posted after it is not replayed: it reaches the subscriber live, after the `ACK`.
        let sequence: UInt64
        /// Where the replay is in `retainedLog`: the values posted with this sequence number or later are still to
        /// be sent.
        var next: UInt64 = 0
    }

    /// A connection's replays not finished yet, in the order of their `SUBSCRIBE`s, and the live posts held for
    /// after them.
    final class ReplayState {
        var pending: [Replay]
        var held: OutboundQueue

        init(pending: [Replay], held: OutboundQueue) {
            self.pending = pending
            self.held = held
        }
    }

    /// Starts replaying the retained values that match a new subscription's wildcard pattern, and sends what fits.
    mutating func startReplay(_ subscription: UInt32, _ pattern: Pattern, on id: ConnectionID) {
        let replay = Replay(subscription: subscription, pattern: pattern, sequence: lastSequence)
        if let state = connections[id.rawValue]!.replay {
            state.pending.append(replay)
        } else {
            var held = OutboundQueue(limit: configuration.bounds.queueBytes, accounting: accounting)
            held.setPolicy(mailboxes[id.rawValue].queue.policy)
            connections[id.rawValue]!.replay = ReplayState(pending: [replay], held: held)
            mailboxes[id.rawValue].isReplaying = true
        }
        feedReplay(id)
    }

    /// Queues retained values of the connection's replays while its queue is under half its bound; queues each
    /// replay's `ACK` when it is done, and once all are, the live posts held meanwhile.
    mutating func feedReplay(_ id: ConnectionID) {
        guard mailboxes[id.rawValue].isReplaying, mailboxes[id.rawValue].phase == .ready else { return }
        // Half the queue's limit: lower while the global bound has it shed, so a replay stays within its share too.
        let threshold = max(1, mailboxes[id.rawValue].queue.limit / 2)
        let state = connections[id.rawValue]!.replay!
        while true {
            guard var replay = state.pending.first else {
                finishReplays(of: id)
                return
            }
            guard mailboxes[id.rawValue].queue.queuedBytes < threshold else { return }
            var index = retainedLog.firstIndex(atOrAfter: replay.next)
            while index < retainedLog.count && mailboxes[id.rawValue].queue.queuedBytes < threshold {
                let entry = retainedLog[index]
                guard entry.sequence <= replay.sequence else {
                    index = retainedLog.count
                    break
                }
                index += 1
                // A stale entry (the name has a newer value, or none) is skipped: a newer value comes live.
                guard let value = retained[entry.name], value.notify.sequence == entry.sequence,
                    replay.pattern.matches(entry.name)
                else { continue }
                enqueueRetained(value.notify, for: replay.subscription, to: id)
            }
            if index < retainedLog.count {
                replay.next = retainedLog[index].sequence
                state.pending[0] = replay
                return
            }
            state.pending.removeFirst()
            enqueueControl(.ack(Frame.Ack(request: replay.subscription, sequence: replay.sequence)), to: id)
        }
    }

    /// Every replay is done: the live posts held meanwhile follow, and the connection is read again.
    ///
    /// The held posts must then fit the queue's bound beside what is left of the replay: as when a live post does not
    /// fit, the policy drops the oldest of them, or, with `disconnect`, the next live post that does not fit ends the
    /// connection.
    private mutating func finishReplays(of id: ConnectionID) {
        // Swapped out rather than copied, so its buffer has one owner and is not copied again to be appended.
        var held = OutboundQueue(limit: 0)
        if let state = connections[id.rawValue]!.replay.take() { swap(&held, &state.held) }
        if !held.isEmpty {
            // Trimmed before it is appended, so the notice of what it drops sits after the ACK, where the gap is.
            let room = max(0, mailboxes[id.rawValue].queue.limit - mailboxes[id.rawValue].queue.queuedBytes)
            dropped += UInt64(held.dropLive(toBytes: room))
            mailboxes[id.rawValue].queue.append(contentsOf: &held)
            markDirty(id)
        }
        mailboxes[id.rawValue].isReplaying = false
    }

    /// Lists the connection for writing, once.
    mutating func markDirty(_ id: ConnectionID) {
        guard !mailboxes[id.rawValue].isDirty else { return }
        mailboxes[id.rawValue].isDirty = true
        dirty.append(id)
    }

    /// The connection is failing: its replays and held posts go, as nothing may follow its final `ERROR`.
    mutating func abandonReplays(of id: ConnectionID) {
        connections[id.rawValue]!.replay = nil
        mailboxes[id.rawValue].isReplaying = false
    }

    /// Holds a live post for a connection whose replay runs, under its overflow policy.
    mutating func holdLive(arenaOffset offset: Int, size: Int, sequence: UInt64, for id: ConnectionID) {
        guard mailboxes[id.rawValue].phase == .ready, mailboxes[id.rawValue].lastSequence != sequence else { return }
        mailboxes[id.rawValue].lastSequence = sequence
        let frame = UnsafeRawBufferPointer(start: arena.base + offset, count: size)
        switch connections[id.rawValue]!.replay!.held.enqueueLive(frame, sequence: sequence) {
        case .queued(let count):
            dropped += UInt64(count)
        case .overflowed:
            mailboxes[id.rawValue].queue.removeLiveFrames()
            _ = fail(
                id,
                WireError(
                    .slowConsumer,
                    "this connection read too slowly: the live posts held during its replay of retained values "
                        + "passed \(configuration.bounds.queueBytes) bytes and its overflow policy is disconnect"
                )
            )
        }
    }
}
