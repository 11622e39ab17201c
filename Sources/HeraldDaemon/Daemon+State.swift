import HeraldBroker
import HeraldPosix

/// heraldd's durable state: the retained values and the wills (registered and pending) in an append-only log of
/// checksummed records (HeraldBroker's ``StateLog``), in `--state-file` (by default `SOCKET.state`, beside the
/// socket, on the session's tmpfs).
///
/// A record is written before anything of its turn is sent: a retained value is in the log before its `ACK`, a will
/// marked posted before its post is delivered. One `pwrite` a turn that changed the state, no `fsync`: the log is on
/// a tmpfs or in memory, which lives as long as the session. At start the log is replayed up to its last good
/// record and rewritten compacted; one that cannot be used is renamed aside, and heraldd starts empty. It never
/// refuses to start for its state.
extension Daemon {
    /// Replays the state log into the broker and starts journalling: before the first connection is read.
    mutating func openState() {
        let path = options.statePath
        let bytes: [UInt8]
        do {
            let existing = try LogFile.open(path: path)
            bytes = try existing.readAll(limit: StateStore.readLimit)
        } catch {
            logger.error("state: cannot read \(path): \(error); starting empty, and keeping no state")
            return
        }
        var replay = StateLog.Replay()
        do {
            replay = try StateLog.replay(bytes)
        } catch {
            let aside = path + ".unusable"
            do {
                try LogFile.rename(path, to: aside)
                logger.error("state: \(path) is not a state log (\(error)); renamed it to \(aside), starting empty")
            } catch {
                logger.error("state: \(path) is not a state log, and cannot be renamed aside: \(error)")
            }
        }
        if let damage = replay.damage {
            logger.warning(
                "state: \(path) is damaged at byte \(replay.validLength) of \(bytes.count) (\(damage)); recovered the "
                    + "\(replay.records) records before it"
            )
        }
        let counts = broker.restore(replay.state, monotonicNow: SystemClock.monotonicNanoseconds())
        if counts.restored > 0 || counts.leftOut > 0 {
            logger.notice(
                "state: restored \(replay.state.retained.count) retained values and \(replay.state.wills.count) wills "
                    + "from \(path)"
                    + (counts.leftOut > 0 ? "; left out \(counts.leftOut) past the bounds" : "")
            )
        }
        restoredPluginRecord = replay.state.plugins
        // A fresh, compacted log: nothing past a damaged record survives to hide later appends behind it.
        do {
            let state = broker.durableState()
            var compacted = StateLog.header
            for record in state.snapshot { record.encode(into: &compacted) }
            if let plugins = replay.state.plugins { StateRecord.plugins(plugins).encode(into: &compacted) }
            let fresh = path + ".new"
            FileSystem.remove(fresh)
            let log = try LogFile.open(path: fresh)
            try log.append(compacted)
            try LogFile.rename(fresh, to: path)
            self.state = StateStore(path: path, log: log)
            broker.keepsStateLog = true
            if let due = broker.nextWillDeadline {
                willTimer = loop.schedule(.wills, at: due)
            }
        } catch {
            logger.error("state: cannot write \(path): \(error); keeping no state")
        }
    }

    /// Writes the records of the turn so far, before its output is sent.
    mutating func writeState() {
        guard let state else {
            broker.takeStateRecords { _ in }
            return
        }
        var failure: SystemError?
        broker.takeStateRecords { bytes in
            do throws(SystemError) {
                try state.log.append(bytes)
                try state.compaction?.log.append(bytes)
            } catch {
                failure = error
            }
        }
        if let failure {
            if !state.failing { logger.error("state: cannot append to \(state.path): \(failure)") }
            state.failing = true
            return
        }
        if state.failing {
            logger.notice("state: appending to \(state.path) again")
            state.failing = false
        }
        if state.compaction == nil && state.log.length > 2 * broker.durableBytes + Self.compactionSlack {
            beginCompaction(state)
        }
    }

    /// Room a log may grow past twice its state before it is compacted: the compaction of a small state is not
    /// worth its writes.
    static let compactionSlack = 1 << 20

    private mutating func beginCompaction(_ state: StateStore) {
        let fresh = state.path + ".new"
        do {
            FileSystem.remove(fresh)
            let log = try LogFile.open(path: fresh)
            var first = StateLog.header
            for record in broker.durableWills() { record.encode(into: &first) }
            if let plugins = restoredPluginRecord { StateRecord.plugins(plugins).encode(into: &first) }
            try log.append(first)
            state.compaction = StateStore.Compaction(path: fresh, log: log, names: broker.retainedNames())
            loop.schedule(.stateCompaction, at: 0)
        } catch {
            logger.error("state: cannot compact \(state.path): \(error)")
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
            try LogFile.rename(compaction.path, to: state.path)
            state.log = compaction.log
            state.compaction = nil
            logger.info("state: compacted \(state.path) from \(before) to \(state.log.length) bytes")
        } catch {
            logger.error("state: cannot compact \(state.path): \(error)")
            state.compaction = nil
        }
    }
}
