import HeraldWire

extension Broker {
    /// What a delivery reads and changes for one connection: its phase, its outgoing queue and the flags
    /// that list it for writing.
    ///
    /// It lives in `mailboxes`, apart from the rest of the connection (its client label, subscriptions
    /// and will), and each event changes it through one mutating call on the array element, so it is
    /// mutated in place. Keeping it inside `Connection` made every delivery copy the whole connection out
    /// of `connections` and back: a dozen retains and releases of its dictionaries and strings, and a
    /// `memcpy`, per subscriber per post.
    @usableFromInline
    struct Mailbox {
        @usableFromInline var phase: Phase = .closed
        @usableFromInline var queue: OutboundQueue
        /// The last post queued here, so a post matching several subscriptions is queued once.
        var lastSequence: UInt64 = 0
        /// Whether the connection is in the broker's `dirty` list.
        var isDirty = false
        /// Whether the connection is in the broker's `urgent` list.
        var isUrgent = false
        /// Whether the connection is in the broker's `arenaHolders` list.
        var holdsArena = false
        /// Whether retained values are being replayed to the connection: its live posts are held back meanwhile.
        @usableFromInline var isReplaying = false
        /// Whether the connection asked for `MONITOR`, which makes it read-only.
        var isMonitor = false
        /// The protocol version `WELCOME` chose; 1 until then.
        @usableFromInline var version: UInt16 = 1
        /// How many of the connection's subscriptions are `NO_LOCAL`: while none is, its own posts need no check.
        var noLocalCount: UInt16 = 0
        /// Who is at the other end: what a post from here is stamped with. Here rather than in `Connection`, so
        /// that the per-post path reads only the mailbox.
        var sender = Sender(pid: 0, uid: 0, gid: 0)
        /// What the owner was last told to watch the connection for (``BrokerAction/watch(_:reading:writing:)``);
        /// a connection starts watched for reading only.
        var watchesReading = true
        var watchesWriting = false

        init(queueLimit: Int, accounting: OutputAccounting, arena: FrameArena) {
            queue = OutboundQueue(limit: queueLimit, accounting: accounting, arena: arena)
        }

        /// What `enqueueLive` did, and which of the broker's lists the connection must now join.
        struct Delivery {
            var outcome: OutboundQueue.LiveOutcome
            var becameDirty: Bool
            var becameUrgent: Bool
            var becameArenaHolder: Bool
        }

        /// Queues a live post unless it is already queued here, marking the mailbox dirty, and urgent
        /// once the queue passes half its bound.
        ///
        /// - Returns: nil when the post was already queued or the connection is not ready.
        mutating func enqueueLive(arenaOffset offset: Int, size: Int, sequence: UInt64) -> Delivery? {
            guard phase == .ready, lastSequence != sequence else { return nil }
            lastSequence = sequence
            let outcome = queue.enqueueLive(arenaOffset: offset, size: size, sequence: sequence)
            let becameDirty = !isDirty
            isDirty = true
            let becameUrgent = !isUrgent && queue.queuedBytes * 2 > queue.limit
            if becameUrgent { isUrgent = true }
            let becameArenaHolder = !holdsArena && queue.arenaBytes > 0
            if becameArenaHolder { holdsArena = true }
            return Delivery(
                outcome: outcome,
                becameDirty: becameDirty,
                becameUrgent: becameUrgent,
                becameArenaHolder: becameArenaHolder
            )
        }

        /// Queues a control frame and marks the mailbox dirty.
        ///
        /// - Returns: Whether it just became dirty, so the broker lists it.
        mutating func enqueueControl(_ frame: Frame) -> Bool {
            queue.enqueueControl(frame)
            defer { isDirty = true }
            return !isDirty
        }

        /// Records a write; the mailbox stops being urgent once its queue is back under half its bound.
        ///
        /// - Returns: How many live notifications the write completed.
        mutating func didWrite(_ byteCount: Int) -> Int {
            let written = queue.didWrite(byteCount)
            if queue.queuedBytes * 2 <= queue.limit { isUrgent = false }
            return written.notifications
        }
    }
}
