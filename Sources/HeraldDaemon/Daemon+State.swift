import HeraldBroker
import HeraldPosix

/// heraldd's durable state: the retained values, the wills (registered and pending) and the processes its plugins
/// run (Daemon+Descendants) in an append-only log of checksummed records (HeraldBroker's ``StateLog``): a memfd in
/// systemd's descriptor store when there is one, else `--state-file` (by default `SOCKET.state`, beside the socket,
/// on the session's tmpfs). See ``StateStore``.
///
/// A record is written before anything of its turn is sent: a retained value is in the log before its `ACK`, a will
/// marked posted before its post is delivered. A turn that changed the state copies its records into a shared mapping
/// of the log (``LogFile/mapAppends(terminator:)``; one `pwrite` a turn when the space cannot be reserved), no
/// `fsync`: the log is on a tmpfs or in memory, which lives as long as the session. At start the log is replayed up
/// to its last good record and rewritten compacted; one that cannot be used is renamed aside (or dropped from the
/// store), and heraldd starts empty. It never refuses to start for its state.
extension Daemon {
    /// Replays the state log into the broker and starts journalling: before the first connection is read.
    mutating func openState() {
        guard options.keepsState else {
            logger.info("state: none kept (--no-state)")
            return
        }
        let notifier = StateStore.descriptorStore()
        let path = options.statePath
        if notifier == nil, SystemdNotifier.fromEnvironment() != nil {
            // Under systemd but without $FDSTORE: systemd before 254 does not announce its store, or the unit sets no
            // FileDescriptorStoreMax=. Said once, at start: the file is as durable for the session's life.
            logger.notice(
                "state: systemd announced no descriptor store ($FDSTORE; systemd 254 or later, with "
                    + "FileDescriptorStoreMax=), so the log is the file \(path)"
            )
        }
        var replay = StateLog.Replay()
        var source = path
        var generation = 0
        var found = false
        // The newest usable log systemd kept; the others are dropped once the new one is stored.
        let stored = storedState.sorted {
            (StateStore.generation(of: $0.name) ?? -1) > (StateStore.generation(of: $1.name) ?? -1)
        }
        for passed in stored {
            generation = max(generation, StateStore.generation(of: passed.name) ?? 0)
            guard !found else { continue }
            let name = "the stored \(passed.name)"
            do {
                let log = try LogFile(adopting: FileDescriptor(owning: passed.rawValue))
                replay = try replayed(try log.readAll(limit: StateStore.readLimit), from: name)
                found = true
                source = name
            } catch {
                logger.error("state: cannot use \(name) (\(error)); dropping it")
            }
        }
        if !found {
            do {
                let existing = try LogFile.open(path: path, create: false)
                replay = try replayed(try existing.readAll(limit: StateStore.readLimit), from: path)
            } catch let error as StateLog.Unusable {
                let aside = path + ".unusable"
                do {
                    try LogFile.rename(path, to: aside)
                    logger.error("state: \(path) is not a state log (\(error)); renamed it to \(aside), starting empty")
                } catch {
                    logger.error("state: \(path) is not a state log, and cannot be renamed aside: \(error)")
                }
            } catch let error as SystemError where error.errno == .noEntry {
                // No log yet: a first start.
            } catch {
                logger.error("state: cannot read \(path): \(error); starting empty")
            }
        }
        let counts = broker.restore(replay.state, monotonicNow: SystemClock.monotonicNanoseconds())
        if counts.restored > 0 || counts.leftOut > 0 {
            logger.notice(
                "state: restored \(replay.state.retained.count) retained values and \(replay.state.wills.count) wills "
                    + "from \(source)" + (counts.leftOut > 0 ? "; left out \(counts.leftOut) past the bounds" : "")
            )
        }
        pluginLeftovers = replay.state.pluginProcesses
        // A fresh, compacted log: nothing past a damaged record survives to hide later appends behind it.
        let place: StateStore.Place = notifier.map { .store($0, generation: generation) } ?? .file(path: path)
        do {
            var compacted = StateLog.header
            for record in broker.durableState().snapshot { record.encode(into: &compacted) }
            if !pluginLeftovers.isEmpty {
                StateRecord.plugins(StateLog.processList(pluginLeftovers)).encode(into: &compacted)
            }
            let copy = try StateStore.makeLog(for: place, growthLimit: Self.reservationLimit(liveBytes: liveStateBytes))
            try copy.append(compacted)
            let state = StateStore(place: place, log: copy)
            try state.install(copy)
            for passed in stored where passed.name != "\(StateStore.storedName)-\(generation + 1)" {
                try? notifier?.removeStored(name: passed.name)
            }
            self.state = state
            broker.keepsStateLog = true
            logger.info("state: kept in \(state.description)")
            if let due = broker.nextWillDeadline {
                willTimer = loop.schedule(.wills, at: due)
            }
        } catch {
            logger.error("state: cannot write a state log (\(error)); keeping no state")
        }
    }

    /// Replays a log's bytes, saying where it is damaged.
    private func replayed(_ bytes: [UInt8], from source: String) throws(StateLog.Unusable) -> StateLog.Replay {
        let replay = try StateLog.replay(bytes)
        if let damage = replay.damage {
            logger.warning(
                "state: \(source) is damaged at byte \(replay.validLength) of \(bytes.count) (\(damage)); recovered "
                    + "the \(replay.records) records before it"
            )
        }
        return replay
    }

    /// Writes the records of the turn so far, before its output is sent.
    mutating func writeState() {
        guard let state else {
            broker.takeStateRecords { _ in }
            return
        }
        var failure: SystemError?
        broker.takeStateRecords { bytes in failure = Self.append(bytes, to: state) }
        stateAppended(failure)
    }

    /// Writes one record of the daemon's own (the plugins' processes) to the state log at once.
    mutating func writeState(_ record: StateRecord) {
        guard let state else { return }
        let bytes = record.encoded
        stateAppended(bytes.withUnsafeBytes { Self.append($0, to: state) })
    }

    /// Appends `bytes` to the log and to the compacted copy being written, if any.
    private static func append(_ bytes: UnsafeRawBufferPointer, to state: StateStore) -> SystemError? {
        do throws(SystemError) {
            try state.log.append(bytes)
            try state.compaction?.log.append(bytes)
            return nil
        } catch {
            return error
        }
    }

    /// Logs a failed append once per episode, and begins a compaction once the log passes its threshold.
    private mutating func stateAppended(_ failure: SystemError?) {
        guard let state else { return }
        if let reason = state.log.takeMappingFailure() ?? state.compaction?.log.takeMappingFailure() {
            if state.log.cutShort || state.compaction?.log.cutShort == true {
                // A store faulted: another process truncated the file. The daemon's state is whole; the file is
                // written again from it.
                logger.error(
                    "state: \(state.description) was cut short by another process (\(reason)); writing it again"
                )
                state.needsRewrite = true
            } else if !state.mappingFailed {
                logger.warning("state: cannot reserve room in \(state.description) (\(reason)); writing it with pwrite")
            }
            state.mappingFailed = true
        }
        if let failure {
            if !state.failing { logger.error("state: cannot append to \(state.description): \(failure)") }
            state.failing = true
            return
        }
        if state.failing {
            logger.notice("state: appending to \(state.description) again")
            state.failing = false
        }
        // Not while the broker holds records of this turn: the copy starts from the broker's state as it is now.
        // The space reserved counts too: it is memory the log takes.
        guard state.compaction == nil && !broker.hasStateToWrite else { return }
        let live = liveStateBytes
        state.log.growthLimit = Self.reservationLimit(liveBytes: live)
        if state.needsRewrite || state.log.length > Self.compactionThreshold(liveBytes: live)
            || state.log.capacity > Self.stateBound(liveBytes: live)
        {
            state.needsRewrite = false
            beginCompaction(state)
        }
    }

    /// The bytes a compacted log of the state now takes: the broker's retained values and wills
    /// (``Broker/durableBytes``) and the plugins' processes record.
    var liveStateBytes: Int {
        let processes = pluginLeftovers.count + plugins.recorded.count
        return broker.durableBytes + (processes == 0 ? 0 : StateRecord.headerSize + 6 + 12 * processes)
    }

    /// The most the state log takes outside a compaction: twice the state it holds, or ``stateFloor`` when that is
    /// more (README, Guarantees).
    static func stateBound(liveBytes: Int) -> Int {
        max(2 * liveBytes, stateFloor)
    }

    /// When the log is compacted: at three quarters of its bound, so that what is appended while the compaction's
    /// steps run (a step a turn, ``StateStore/valuesPerStep`` values each) finds room below the bound.
    static func compactionThreshold(liveBytes: Int) -> Int {
        stateBound(liveBytes: liveBytes) / 4 * 3
    }

    /// The most the space reserved for the log's mapping grows to by doubling: the compaction threshold, so the log's
    /// file keeps the quarter of its bound that a log written by `pwrite` keeps (for a state that shrinks before the
    /// compaction is done); past it, while a compaction runs, it grows a page at a time.
    static func reservationLimit(liveBytes: Int) -> Int {
        compactionThreshold(liveBytes: liveBytes)
    }

    /// The bound of a small state: compacting a state of a few KiB each time its log doubled would rewrite it every
    /// few posts, for a saving of a few KiB of a daemon whose own memory is some MiB.
    static let stateFloor = 64 << 10

    private mutating func beginCompaction(_ state: StateStore) {
        do {
            let log = try state.makeCopy()
            var first = StateLog.header
            for record in broker.durableWills() { record.encode(into: &first) }
            let processes = pluginLeftovers.merging(plugins.recorded) { _, new in new }
            if !processes.isEmpty { StateRecord.plugins(StateLog.processList(processes)).encode(into: &first) }
            try log.append(first)
            state.compaction = StateStore.Compaction(log: log, names: broker.retainedNames())
            loop.schedule(.stateCompaction, at: 0)
        } catch {
            logger.error("state: cannot compact \(state.description): \(error)")
        }
    }

    /// One step of the compaction: a bounded number of retained values, then the swap.
    mutating func compactionStepDue() {
        guard let state, let compaction = state.compaction else { return }
        let end = min(compaction.names.count, compaction.next + StateStore.valuesPerStep)
        var bytes: [UInt8] = []
        for name in compaction.names[compaction.next..<end] {
            broker.retainedRecord(for: name)?.encode(into: &bytes)
        }
        compaction.next = end
        do {
            try compaction.log.append(bytes)
            guard end == compaction.names.count else {
                loop.schedule(.stateCompaction, at: 0)
                return
            }
            let before = state.log.length
            state.compaction = nil
            try state.install(compaction.log)
            logger.info("state: compacted \(state.description) from \(before) to \(state.log.length) bytes")
        } catch {
            logger.error("state: cannot compact \(state.description): \(error)")
            state.compaction = nil
        }
    }
}
