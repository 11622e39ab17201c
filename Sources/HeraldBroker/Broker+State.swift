import HeraldWire

/// The broker's durable state (``StateLog``): each change of a retained value or a will becomes a ``StateRecord``
/// in ``stateJournal``, which the owner writes to its log before it sends anything of the turn (so a value is in
/// the log before its `ACK`, and a will is marked posted before its post is delivered), and a restarted daemon's
/// broker is rebuilt from the log with ``restore(_:monotonicNow:)``.
///
/// Only retained posts and wills pay for this: a live post writes no record.
extension Broker {
    /// Whether the owner keeps a state log: then changes are journalled. Off by default (tests, benchmarks).
    public var keepsStateLog: Bool {
        get { stateJournal.isEnabled }
        set { stateJournal.isEnabled = newValue }
    }

    /// Whether records wait for the owner to write them. Asked before every write, so it is inlined.
    @inlinable @inline(__always)
    public var hasStateToWrite: Bool { !stateJournal.bytes.isEmpty }

    /// Hands the records journalled since the last call, framed, to `body`, then forgets them.
    public mutating func takeStateRecords(_ body: (UnsafeRawBufferPointer) -> Void) {
        stateJournal.bytes.withUnsafeBytes(body)
        stateJournal.bytes.removeAll(keepingCapacity: stateJournal.bytes.capacity <= 1 << 20)
    }

    /// The state a log should now hold, for a compacted copy: the retained values and the wills held (registered
    /// on open connections, or pending).
    public func durableState() -> StateLog {
        var state = StateLog()
        state.lastSequence = lastSequence
        state.lastWillID = lastWillID
        for (name, value) in retained { state.retained[name] = Self.retainedValue(value.notify) }
        for record in durableWills() { state.apply(record) }
        return state
    }

    /// How many bytes a compacted log of the current retained values and wills takes, header included: exact for
    /// the retained values, and for a will its record with a pending mark, its client's `HELLO` label counted as
    /// ``willLabelAllowance`` bytes. The owner compacts its log when it outgrows twice this (Daemon+State).
    public var durableBytes: Int {
        StateLog.header.count + retainedBytes + retainedOriginBytes
            + retained.count * (StateRecord.headerSize + StateRecord.retainedFixedSize)
            + willBytes + willCount * Self.willRecordAllowance
    }

    /// A will's record besides its name and payload (kind, flags, id, delay, credentials and three counts), its
    /// client's label as ``willLabelAllowance``, and the record that marks it pending.
    static let willRecordAllowance = StateRecord.headerSize + 34 + willLabelAllowance + StateRecord.headerSize + 18
    /// What a will's client label is counted as in ``durableBytes``: labels are short ("herald-cli", an app's name).
    static let willLabelAllowance = 32

    /// What an origin adds to a retained value's state record: 0 without one.
    static func originRecordSize(_ origin: Frame.Origin?) -> Int {
        origin.map { 2 + $0.host.utf8.count + 2 + $0.daemon.utf8.count + 8 } ?? 0
    }

    /// The state record's value for a retained `NOTIFY`.
    static func retainedValue(_ notify: Frame.Notify) -> StateRecord.RetainedValue {
        StateRecord.RetainedValue(
            sequence: notify.sequence,
            time: notify.time,
            pid: notify.pid,
            uid: notify.uid,
            gid: notify.gid,
            name: notify.name,
            payload: notify.payload,
            origin: notify.origin
        )
    }

    /// Rebuilds the retained values and the wills from a log, before any connection opens.
    ///
    /// A will whose connection was open when the log ended waits its delay from `monotonicNow`, and is withdrawn
    /// if a client of the same uid and `HELLO` label registers a will of the same name meanwhile (its client came
    /// back: Herald's library registers its will again on every connection). A will already pending keeps its
    /// deadline. Values and wills past the bounds are left out.
    ///
    /// - Returns: How many retained values and wills were restored, and how many left out.
    @discardableResult
    public mutating func restore(_ state: StateLog, monotonicNow: UInt64) -> (restored: Int, leftOut: Int) {
        precondition(openConnections == 0 && retained.isEmpty && willCount == 0, "restore into a fresh broker")
        var restored = 0
        var leftOut = 0
        lastSequence = max(lastSequence, state.lastSequence)
        lastWillID = max(lastWillID, state.lastWillID)
        let bounds = configuration.bounds
        for value in state.retained.values.sorted(by: { $0.sequence < $1.sequence }) {
            let cost = Self.retainedCost(name: value.name, payloadCount: value.payload.count)
            guard !value.payload.isEmpty, retained.count < bounds.maxRetained,
                retainedBytes + cost <= bounds.maxRetainedBytes
            else {
                leftOut += 1
                continue
            }
            retained[value.name] = Retained(
                notify: Frame.Notify(
                    sequence: value.sequence,
                    time: value.time,
                    pid: value.pid,
                    uid: value.uid,
                    gid: value.gid,
                    name: value.name,
                    origin: value.origin,
                    payload: value.payload
                )
            )
            retainedBytes += cost
            retainedOriginBytes += Self.originRecordSize(value.origin)
            retainedLog.append(sequence: value.sequence, name: value.name)
            lastSequence = max(lastSequence, value.sequence)
            restored += 1
        }
        for entry in state.wills.values.sorted(by: { $0.record.id < $1.record.id }) {
            let record = entry.record
            let will = Frame.Will(
                request: 0,
                delayMilliseconds: record.delayMilliseconds,
                name: record.name,
                payload: record.payload,
                retain: record.retain
            )
            guard willRefusal(will, replacing: nil) == nil else {
                leftOut += 1
                continue
            }
            charge(will, 1)
            let orphaned = entry.due == nil
            let pending = PendingWill(
                will: will,
                sender: Sender(pid: record.pid, uid: record.uid, gid: record.gid),
                id: record.id,
                client: record.client,
                orphaned: orphaned
            )
            pendingWills.insert(
                pending,
                deadline: entry.due ?? monotonicNow + UInt64(record.delayMilliseconds) * 1_000_000
            )
            if orphaned {
                orphanedWills[OrphanKey(uid: record.uid, client: record.client, name: record.name)] = pending
            }
            restored += 1
        }
        return (restored, leftOut)
    }

    // MARK: Hooks where the state changes

    func willRecord(_ will: Frame.Will, id: UInt64, sender: Sender, client: String) -> StateRecord.WillRecord {
        StateRecord.WillRecord(
            id: id,
            delayMilliseconds: will.delayMilliseconds,
            retain: will.retain,
            pid: sender.pid,
            uid: sender.uid,
            gid: sender.gid,
            client: client,
            name: will.name,
            payload: will.payload
        )
    }

    /// A retained value was stored or cleared.
    mutating func journalRetained(_ notify: Frame.Notify) {
        guard stateJournal.isEnabled else { return }
        if notify.payload.isEmpty {
            stateJournal.append(.cleared(name: notify.name, sequence: notify.sequence))
        } else {
            stateJournal.append(.retained(Self.retainedValue(notify)))
        }
    }

    /// The connection registered `will`: it gets a new id, and a will recovered from before a restart that this
    /// client left is withdrawn, as the client is back.
    mutating func willRegistered(_ will: Frame.Will, on id: ConnectionID) {
        lastWillID += 1
        connections[id.rawValue]!.willID = lastWillID
        let sender = mailboxes[id.rawValue].sender
        let client = connections[id.rawValue]!.client
        if !orphanedWills.isEmpty,
            let orphan = orphanedWills.removeValue(forKey: OrphanKey(uid: sender.uid, client: client, name: will.name))
        {
            // It stays in the heap until due, skipped then; it is no longer charged.
            cancelledWills.insert(orphan.id)
            charge(orphan.will, -1)
            stateJournal.append(.willEnded(id: orphan.id))
        }
        stateJournal.append(.willRegistered(willRecord(will, id: lastWillID, sender: sender, client: client)))
    }

    /// The will with this id is gone: withdrawn, replaced, posted, or its connection said `BYE`.
    mutating func willEnded(_ willID: UInt64) {
        stateJournal.append(.willEnded(id: willID))
    }

    /// A will's connection ended without `BYE`.
    mutating func willBecamePending(_ willID: UInt64, due: UInt64) {
        stateJournal.append(.willPending(id: willID, due: due))
    }

    /// Takes the pending will `pending` out of the orphan index before it is posted, and journals it gone; false
    /// when its client came back and it was withdrawn.
    mutating func willIsDue(_ pending: PendingWill) -> Bool {
        if cancelledWills.remove(pending.id) != nil { return false }
        if pending.orphaned {
            orphanedWills[OrphanKey(uid: pending.sender.uid, client: pending.client, name: pending.will.name)] = nil
        }
        willEnded(pending.id)
        return true
    }
}

/// The records a broker has journalled and its owner has not yet written.
@usableFromInline
struct StateJournal {
    var isEnabled = false
    @usableFromInline var bytes: [UInt8] = []

    mutating func append(_ record: StateRecord) {
        guard isEnabled else { return }
        record.encode(into: &bytes)
    }
}

/// How a recovered will is matched to its client coming back.
struct OrphanKey: Hashable {
    let uid: UInt32
    let client: String
    let name: String
}

extension Broker {
    /// The names with a retained value, for a compaction to walk a few at a time.
    public func retainedNames() -> [String] {
        Array(retained.keys)
    }

    /// The record of the name's retained value as it is now, or nil when it has none.
    public func retainedRecord(for name: String) -> StateRecord? {
        guard let notify = retained[name]?.notify else { return nil }
        return .retained(Self.retainedValue(notify))
    }

    /// The records of every will held, registered or pending: bounded by `maxWillBytes`, written at once.
    public func durableWills() -> [StateRecord] {
        var state = StateLog()
        for slot in connections.indices {
            guard let connection = connections[slot], let will = connection.will else { continue }
            state.wills[connection.willID] = StateLog.Will(
                record: willRecord(
                    will,
                    id: connection.willID,
                    sender: mailboxes[slot].sender,
                    client: connection.client
                ),
                due: nil
            )
        }
        for node in pendingWills.nodes where !cancelledWills.contains(node.element.id) {
            let pending = node.element
            state.wills[pending.id] = StateLog.Will(
                record: willRecord(pending.will, id: pending.id, sender: pending.sender, client: pending.client),
                due: node.deadline
            )
        }
        return state.snapshot
    }
}
