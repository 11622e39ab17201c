import HeraldBroker
import HeraldPlugins
import HeraldPosix
import HeraldWire

#if canImport(Glibc)
import Glibc
#endif

/// heraldd as the supervisor of its plugins: it feeds the `Supervisor` what happens (the folders read, a child
/// started or gone, a subscription, a request, the time) and carries out what it decides (start a child, signal it,
/// post its state, log). No thread per plugin and no Foundation: children are forked in the shim, their exits come
/// as SIGCHLD from the daemon's event loop, and their output on pipes watched by that loop, with the supervisor's
/// timer among the loop's timers.
extension Daemon {
    var pluginNow: Instant { Instant(nanoseconds: SystemClock.monotonicNanoseconds()) }

    /// Reads the plugin folders and starts the plugins whose activation is `start`, once they are read.
    mutating func startPlugins() {
        guard plugins.enabled else { return }
        prepareToSupervise()
        plugins.folderRead = plugins.beginRead(isStartup: true)
        continueReadingFolders()
    }

    /// SIGHUP, or `PLUGIN` `RELOAD`: reread the folders; new plugins load, removed ones stop, changed ones restart.
    /// A reload asked for while the folders are being read is done once that reading is applied.
    mutating func reloadPlugins() {
        guard plugins.enabled, shutdownDeadline == nil else { return }
        logger.notice("reloading the plugin folders")
        guard plugins.folderRead == nil else {
            plugins.folderRead!.again = true
            return
        }
        plugins.folderRead = plugins.beginRead(isStartup: false)
        continueReadingFolders()
    }

    /// The next turn's share of the folders' files; once all are read, the catalog goes to the supervisor.
    mutating func continueReadingFolders() {
        plugins.foldersTimer = nil
        guard var read = plugins.folderRead.take(), shutdownDeadline == nil else { return }
        PluginHost.readSome(&read)
        guard read.isDone else {
            plugins.folderRead = read
            plugins.foldersTimer = loop.schedule(.pluginWork(.folders), at: SystemClock.monotonicNanoseconds())
            return
        }
        let catalog = plugins.catalog(
            of: read,
            daemonUID: ProcessIdentity.currentUID(),
            searchPath: ProcessEnvironment.value("PATH") ?? "/usr/local/bin:/usr/bin:/bin"
        )
        let now = pluginNow
        if read.isStartup {
            logger.info(
                "plugins: \(catalog.declarations.count) loaded, \(catalog.refused.count) refused, "
                    + "\(catalog.masked.count) masked, from \(read.folders.joined(separator: ", "))"
            )
            // Started first, so each plugin of the catalog is posted once, as starting, not inactive and then
            // starting: with thousands of plugins that halves this turn.
            carryOut(plugins.supervisor.daemonStarted(now: now))
            carryOut(plugins.supervisor.loaded(catalog, now: now))
        } else {
            carryOut(plugins.supervisor.loaded(catalog, subscriptions: broker.livePatterns(), now: now))
        }
        if read.again {
            plugins.folderRead = plugins.beginRead(isStartup: false)
            continueReadingFolders()
        }
    }

    /// SIGCHLD: collects every child that exited.
    ///
    /// At most ``PluginHost/exitsPerTurn`` a turn: each exit may restart its plugin, and 2,000 plugins ending at
    /// once (a reload of every file) must not all start again before a client is served. The rest are collected
    /// on the next turns (a timer due at once), as SIGCHLD does not come again for children already waiting.
    mutating func childrenExited() {
        var exitedPlugins: [Int32: String] = [:]
        defer { if plugins.enabled && !exitedPlugins.isEmpty { orphansMayBeLeft(by: exitedPlugins) } }
        let reaped = ChildProcesses.reapExited(limit: PluginHost.exitsPerTurn)
        if reaped.count == PluginHost.exitsPerTurn && plugins.reapTimer == nil {
            plugins.reapTimer = loop.schedule(.pluginWork(.reap), at: SystemClock.monotonicNanoseconds())
        }
        for (pid, status) in reaped {
            // The plugin led a process group of its own (setsid at spawn). What it left running there, such as the
            // session hook's dbus-monitor when the hook is killed, goes with it, as systemd ends what a service
            // leaves behind; otherwise every crash and restart leaks those processes. The group's members keep its
            // id in use, so the signal reaches no one else; an empty group is ESRCH, which is ignored.
            // An orphan heraldd kept (its plugin runs) is gone: off the record.
            recordExit(pid)
            if exitWasFailedExec(pid) { continue }
            if let name = plugins.supervisor.plugin(withPID: pid) {
                ChildProcesses.send(SIGKILL, to: -pid)
                exitedPlugins[pid] = name
            }
            let exit: ProcessExit
            switch status {
            case .exited(let code): exit = .exited(code)
            case .killed(let signal): exit = .killed(signal: signal)
            }
            carryOut(plugins.supervisor.exited(pid: pid, status: exit, now: pluginNow))
        }
    }

    /// One of the plugin host's timers fired.
    mutating func pluginWorkDue(_ work: PluginHost.Work) {
        switch work {
        case .outputResume: pluginOutputsResumeDue()
        case .starts: startQueuedPlugins()
        case .reap: pluginReapDue()
        case .orphans: orphanCheckDue()
        case .folders: continueReadingFolders()
        }
    }

    /// The timer for exits a turn left uncollected fired.
    mutating func pluginReapDue() {
        plugins.reapTimer = nil
        childrenExited()
    }

    /// The supervisor's timer fired.
    mutating func pluginTimerFired() {
        plugins.wakeTimer = nil
        carryOut(plugins.supervisor.timerFired(now: pluginNow))
    }

    /// Carries out a `PLUGIN` request (``BrokerAction/pluginRequest(_:)``) and answers it.
    mutating func answerPluginRequest(_ request: Broker.PluginRequest) {
        let error = pluginRequest(request.frame)
        broker.answer(request, error: error, into: &actions)
    }

    /// A subscription began while the supervisor awaits some (``BrokerAction/subscribed(_:)``).
    mutating func subscribed(_ pattern: Pattern) {
        carryOut(plugins.supervisor.subscribed(pattern, now: pluginNow))
    }

    /// Carries out one `PLUGIN` request.
    ///
    /// - Returns: nil, or the reason it names no plugin the daemon supervises.
    private mutating func pluginRequest(_ frame: Frame.Plugin) -> String? {
        guard plugins.enabled else { return "heraldd runs without plugins (--no-plugins)" }
        guard shutdownDeadline == nil else { return "heraldd is shutting down" }
        if frame.action == .reload {
            reloadPlugins()
            return nil
        }
        guard let status = plugins.supervisor.status(of: frame.name) else {
            return "heraldd supervises no plugin called \(frame.name)"
        }
        if status.state == .refused {
            return "the plugin file \(status.file) was refused: \(status.reason ?? "see herald plugins")"
        }
        let now = pluginNow
        switch frame.action {
        case .start: carryOut(plugins.supervisor.startRequested(frame.name, now: now))
        case .stop: carryOut(plugins.supervisor.stopRequested(frame.name, now: now))
        case .restart: carryOut(plugins.supervisor.restartRequested(frame.name, now: now))
        case .reload: break
        }
        return nil
    }

    /// Shutdown began: every plugin gets SIGTERM, then SIGKILL after 2 s.
    mutating func stopPlugins() {
        guard plugins.enabled else { return }
        carryOut(plugins.supervisor.shutdownBegan(now: pluginNow))
    }

    /// Carries out the supervisor's actions in order. What starting a child gave is fed back at once, before any
    /// other event, as the supervisor requires; the actions that answer it go after the ones already queued, so the
    /// states are posted in the order they were reached.
    mutating func carryOut(_ actions: [Supervisor.Action]) {
        var queue = actions[...]
        while let action = queue.popFirst() {
            switch action {
            case .spawn(let declaration):
                let now = pluginNow
                let startedBy = ProcessTable.startTimeNow()
                switch spawnPlugin(declaration) {
                case .success(let pid):
                    logger.info("plugin \(declaration.name): started, pid \(pid)")
                    recordPluginProcess(pid, startedBy: startedBy)
                    queue += plugins.supervisor.spawned(declaration.name, pid: pid, now: now)
                case .failure(let reason, let permanent):
                    logger.warning("plugin \(declaration.name): cannot start: \(reason)")
                    queue += plugins.supervisor.spawnFailed(
                        declaration.name,
                        reason: reason,
                        permanent: permanent,
                        now: now
                    )
                }
            case .continueStarting:
                // A timer due now: the loop serves what is ready first, then gives the queued plugins their turn.
                if plugins.startsTimer == nil {
                    plugins.startsTimer = loop.schedule(
                        .pluginWork(.starts),
                        at: SystemClock.monotonicNanoseconds() + PluginHost.startsPause
                    )
                }
            case .signal(let pid, let signal):
                // The plugin leads a process group of its own (setsid at spawn): the signal goes to the whole group,
                // so the helpers a plugin script started stop with it, and to the plugin itself in case it left.
                let number = signal == .terminate ? SIGTERM : SIGKILL
                signalDescendantsOutsideGroup(of: pid, number)
                ChildProcesses.send(number, to: -pid)
                ChildProcesses.send(number, to: pid)
            case .wakeAt(let instant):
                // The supervisor has one timer: a new wake-up replaces the one asked for before.
                if let timer = plugins.wakeTimer.take() { loop.cancel(timer) }
                plugins.wakeTimer = loop.schedule(.plugins, at: instant.nanoseconds)
            case .publish(let name, let status):
                postPluginState(
                    PluginDeclaration.statusName(of: name),
                    status.payload(since: wallClockText(status.since))
                )
            case .unpublish(let name):
                postPluginState(PluginDeclaration.statusName(of: name), [])
            case .log(let level, let message):
                switch level {
                case .debug: logger.debug(message)
                case .info: logger.info(message)
                case .notice: logger.notice(message)
                case .warning: logger.warning(message)
                case .error: logger.error(message)
                }
            case .shutdownComplete:
                plugins.shutdownComplete = true
                endEveryOrphan()
            }
        }
        broker.reportsSubscriptions = plugins.supervisor.awaitsSubscriptions
    }

    /// The next turn's share of the plugins waiting to start.
    mutating func startQueuedPlugins() {
        plugins.startsTimer = nil
        carryOut(plugins.supervisor.startQueued(now: pluginNow))
    }

    /// Posts a plugin's state, retained, as the daemon (an empty payload clears it).
    private mutating func postPluginState(_ name: String, _ payload: [UInt8]) {
        // The catalog gives every file a valid name (PluginName); this guard keeps a bug there from ever being a
        // crash of the daemon and every client with it.
        guard Name.isValid(name) else {
            logger.error("\(name): not a valid name; the plugin's state is not posted")
            return
        }
        guard payload.count <= options.bounds.maxPayload else {
            logger.warning("\(name): its state (\(payload.count) bytes) is over --max-payload; not posted")
            return
        }
        let daemon = Sender(
            Credentials(
                pid: ProcessIdentity.currentPID(),
                uid: ProcessIdentity.currentUID(),
                gid: ProcessIdentity.currentGID()
            )
        )
        broker.postAsDaemon(
            name: name,
            payload: payload,
            retain: true,
            sender: daemon,
            now: SystemClock.realtimeNanoseconds()
        )
    }

    /// The wall-clock time of a monotonic instant, as ISO 8601.
    private func wallClockText(_ instant: Instant) -> String {
        let monotonic = SystemClock.monotonicNanoseconds()
        let realtime = SystemClock.realtimeNanoseconds()
        let ago = monotonic > instant.nanoseconds ? monotonic - instant.nanoseconds : 0
        return WallClockText.iso8601(nanosecondsSince1970: realtime > ago ? realtime - ago : 0)
    }
}
