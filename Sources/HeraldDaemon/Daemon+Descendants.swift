import HeraldBroker
import HeraldPlugins
import HeraldPosix

#if canImport(Glibc)
import Glibc
#endif

/// No descendant of a plugin outlives it (issue 27). heraldd is a child subreaper, so whatever a plugin started and
/// left, even in a session of its own (`setsid`), is reparented to heraldd when its parent dies, and is ended when
/// it belongs to a plugin that has no process any more:
/// - a plugin's process group goes with it (SIGTERM with its stop, SIGKILL once it exited);
/// - at a stop, its descendants in other groups get SIGTERM too;
/// - once it exited, every orphan of heraldd that was in its session or group, or that carries its
///   `HERALD_PLUGIN` and was started before the plugin's current process, gets SIGKILL with all it started;
/// - at the end of shutdown, every orphan left gets SIGKILL.
///
/// A SIGKILL of heraldd cannot be acted on: each plugin dies with it (`PR_SET_PDEATHSIG`), and what they started is
/// ended by the next heraldd on the same socket, from the record of them (each plugin's pid, which is also its group
/// and session, and each orphan's, with start times) and from the environment (`HERALD_SOCKET` naming this socket)
/// of what is left.
///
/// The record lives in the state log (Daemon+State: `pluginStarted`, `pluginEnded` and, in a compacted copy, the
/// whole set), which the next heraldd replays before its plugins start; under systemd that is a memfd in the
/// descriptor store, beside `KillMode=control-group`, which ends the unit's processes anyway. Without a state log
/// (`--no-state`, or one that cannot be written) it is the file `SOCKET.plugins`, lines `+ PID START` and `- PID`:
/// the next heraldd reads that file too, whatever it keeps, so a record is never skipped when the option changes
/// between two daemons. A log renamed aside as unusable loses its record with the rest of the state; what carries
/// `HERALD_SOCKET` is still found.
extension Daemon {
    /// The record of this daemon's plugin processes, for the next daemon after a SIGKILL.
    var leftoversRecord: String { options.socketPath + ".plugins" }

    /// Makes heraldd the subreaper of its plugins' descendants, and ends what a killed heraldd on this socket left.
    mutating func prepareToSupervise() {
        do {
            try ChildProcesses.becomeSubreaper()
        } catch {
            logger.warning("plugins: cannot become the subreaper of their descendants: \(error)")
        }
        endLeftoversOfLastDaemon()
    }

    /// Records a process heraldd must end if it is killed: `pid` with its start time, or a time before it
    /// (`startedBy`, taken before the fork) for a child just forked.
    mutating func recordPluginProcess(_ pid: Int32, startedBy: UInt64? = nil) {
        guard let start = startedBy ?? ProcessTable.entry(of: pid)?.startTime else { return }
        plugins.recorded[pid] = start
        if state != nil {
            writeState(.pluginStarted(StateRecord.PluginProcess(pid: pid, startTime: start)))
        } else {
            appendToRecord("+ \(pid) \(start)\n")
        }
    }

    /// Records that the process `pid` is gone: a plugin's group and session are ended with it, and its pid may be
    /// reused.
    mutating func recordExit(_ pid: Int32) {
        guard plugins.recorded.removeValue(forKey: pid) != nil else { return }
        plugins.recordedOrphans.remove(pid)
        if state != nil {
            writeState(.pluginEnded(pid: pid))
        } else {
            appendToRecord("- \(pid)\n")
        }
    }

    /// Appends a line to the record file, or rewrites it with only what is live once most of its lines are history:
    /// a plugin restarting for days must not grow it without bound. (The state log is compacted as a whole.)
    private mutating func appendToRecord(_ line: String) {
        plugins.recordLines += 1
        do {
            if plugins.recordLines > 2 * plugins.recorded.count + 256 {
                let live = plugins.recorded.map { "+ \($0.key) \($0.value)\n" }.joined()
                try FileSystem.replace(leftoversRecord, with: live)
                plugins.recordLines = plugins.recorded.count
            } else {
                try FileSystem.append(line, to: leftoversRecord)
            }
        } catch {
            logger.warning("plugins: cannot write \(leftoversRecord): \(error)")
        }
    }

    /// Sends `signal` to what a plugin started outside its process group (which gets it separately): its
    /// `setsid` helpers, still under it in the process tree.
    func signalDescendantsOutsideGroup(of pid: Int32, _ signal: Int32) {
        for descendant in ProcessTable.tree(of: pid).dropFirst() {
            guard let entry = ProcessTable.entry(of: descendant), entry.group != pid else { continue }
            ChildProcesses.send(signal, to: descendant)
        }
    }

    /// Plugins exited: what they left is looked for shortly, once for all the exits of that moment. Listing
    /// heraldd's children costs the kernel time in their number (with thousands of plugins, a reload of every file
    /// would otherwise list them thousands of times); an orphan lives at most ``orphanCheckDelay`` longer.
    mutating func orphansMayBeLeft(by exited: [Int32: String]) {
        plugins.exitedSinceOrphanCheck.merge(exited) { _, new in new }
        guard plugins.orphanTimer == nil else { return }
        plugins.orphanTimer = loop.schedule(
            .pluginWork(.orphans),
            at: SystemClock.monotonicNanoseconds() + PluginHost.orphanCheckDelay
        )
    }

    /// The orphan check's timer fired.
    mutating func orphanCheckDue() {
        plugins.orphanTimer = nil
        let exited = plugins.exitedSinceOrphanCheck
        plugins.exitedSinceOrphanCheck = [:]
        endOrphans(exited: exited)
    }

    /// After a batch of exits: ends each orphan that belongs to a plugin with no process, or to an earlier
    /// process of it. `exited` are the plugins whose process was just reaped, by pid.
    mutating func endOrphans(exited: [Int32: String]) {
        let own = ProcessIdentity.currentPID()
        for child in ProcessTable.children(of: own) where plugins.supervisor.plugin(withPID: child) == nil {
            guard let entry = ProcessTable.entry(of: child), !entry.isZombie else { continue }
            if exited[entry.session] != nil || exited[entry.group] != nil {
                endTree(of: child, because: "left by plugin \(exited[entry.session] ?? exited[entry.group]!)")
                continue
            }
            guard let name = ProcessTable.environmentValue(of: child, "HERALD_PLUGIN") else {
                if plugins.recordedOrphans.insert(child).inserted {
                    recordPluginProcess(child)
                    logger.info("plugins: pid \(child) was left by a plugin, which one is not known")
                }
                continue
            }
            if let current = plugins.supervisor.status(of: name)?.pid, let running = ProcessTable.entry(of: current),
                running.startTime <= entry.startTime
            {
                // The plugin's running process may have started it: its helper, kept while the plugin runs.
                if plugins.recordedOrphans.insert(child).inserted { recordPluginProcess(child) }
                continue
            }
            endTree(of: child, because: "left by plugin \(name)")
        }
    }

    /// Shutdown is over: ends every orphan still here, and forgets the record (nothing is left to end).
    mutating func endEveryOrphan() {
        if let timer = plugins.orphanTimer.take() { loop.cancel(timer) }
        let own = ProcessIdentity.currentPID()
        for child in ProcessTable.children(of: own) where plugins.supervisor.plugin(withPID: child) == nil {
            endTree(of: child, because: "left by a plugin, at shutdown")
        }
        FileSystem.remove(leftoversRecord)
        plugins.recorded = [:]
        plugins.recordLines = 0
        if state != nil { writeState(.plugins([])) }
    }

    /// SIGKILL to `pid` and everything it started.
    private mutating func endTree(of pid: Int32, because reason: String) {
        let tree = ProcessTable.tree(of: pid)
        logger.info("plugins: ending pid \(pid)\(tree.count > 1 ? " and \(tree.count - 1) it started" : ""), \(reason)")
        for process in tree { ChildProcesses.send(SIGKILL, to: process) }
    }

    /// Ends what the last heraldd on this socket left when it was killed: the processes in the sessions and groups
    /// of its plugins (started after them), the ones it recorded (same pid and start time), and those whose
    /// environment names this socket as a plugin's. Then starts a fresh record.
    private mutating func endLeftoversOfLastDaemon() {
        let file = try? FileSystem.contents(of: leftoversRecord, limit: 64 << 20)
        // No record anywhere: the last heraldd stopped cleanly, or ran no plugin; no need to list every process.
        guard file != nil || !pluginLeftovers.isEmpty else { return }
        var recorded = pluginLeftovers
        if let file { recorded.merge(Self.parseRecordFile(file)) { _, fromFile in fromFile } }
        endPluginsHere(recorded: recorded)
        FileSystem.remove(leftoversRecord)
        if !pluginLeftovers.isEmpty {
            pluginLeftovers = [:]
            writeState(.plugins(StateLog.processList(plugins.recorded)))
        }
    }

    /// The pids and start times the record file `SOCKET.plugins` holds as live.
    private static func parseRecordFile(_ bytes: [UInt8]) -> [Int32: UInt64] {
        var recorded: [Int32: UInt64] = [:]
        for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") {
            let words = line.split(separator: " ")
            if words.count == 2, words[0] == "-", let pid = Int32(words[1]) {
                recorded[pid] = nil
                continue
            }
            guard words.count == 3, words[0] == "+", let pid = Int32(words[1]), let start = UInt64(words[2]) else {
                continue
            }
            recorded[pid] = start
        }
        return recorded
    }

    /// SIGKILL to every process of `recorded` (or in their groups and sessions), and to every process whose
    /// environment names this socket as a plugin's.
    private mutating func endPluginsHere(recorded: [Int32: UInt64]) {
        var recorded = recorded
        // A recorded pid now held by a process that started long after it was recorded was reused: the session
        // and group of that pid are someone else's. (While any process is in a session or group, the kernel
        // does not reuse its id; so members of a recorded group whose leader is gone are the plugin's.)
        for (pid, start) in recorded {
            if let now = ProcessTable.entry(of: pid), now.startTime < start || now.startTime - start > 100 {
                recorded[pid] = nil
            }
        }
        let own = ProcessIdentity.currentPID()
        var ended = 0
        for pid in ProcessTable.allPIDs() where pid != own {
            guard let entry = ProcessTable.entry(of: pid), !entry.isZombie else { continue }
            let inRecordedGroup = [entry.session, entry.group].contains { leader in
                recorded[leader].map { entry.startTime >= $0 } ?? false
            }
            // A plugin's own pid is recorded with a time taken just before its fork: at most its start time.
            let isRecorded = recorded[pid].map { $0 <= entry.startTime && entry.startTime - $0 <= 100 } ?? false
            let isPluginHere =
                ProcessTable.environmentValue(of: pid, "HERALD_SOCKET") == options.socketPath
                && ProcessTable.environmentValue(of: pid, "HERALD_PLUGIN") != nil
            guard inRecordedGroup || isRecorded || isPluginHere else { continue }
            ChildProcesses.send(SIGKILL, to: pid)
            ended += 1
        }
        if ended > 0 { logger.notice("plugins: ended \(ended) process(es) left by the last heraldd on this socket") }
    }
}
