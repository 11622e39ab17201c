import HeraldWire

/// The plugin supervisor's decisions, as a state machine with no I/O: what to start when, the restart backoff,
/// the failure window, stopping, and shutdown.
///
/// Its owner (the daemon) feeds it events, each with the monotonic time `now`, and carries out the actions each
/// returns, in order: spawn a process, signal one, arm its single timer, post a status, log a line. The machine
/// reads no clock, spawns nothing and never blocks.
///
/// The owner's contract:
/// - Answer every `.spawn` with ``spawned(_:pid:now:)`` or ``spawnFailed(_:reason:now:)`` before feeding any
///   other event; an event for a plugin whose spawn is unanswered traps.
/// - Report every exit of a spawned process with ``exited(pid:status:now:)``.
/// - Keep one timer: `.wakeAt(t)` replaces the previous request, and when it fires call ``timerFired(now:)``. A
///   timer that fires with nothing due is harmless.
///
/// Restart policy (issue 17):
/// - A failure (a non-zero exit, a signal, a failed spawn) with `Restart=on-failure` or `always` restarts after
///   100 ms, then 200 ms, 400 ms, … up to 30 s. The delay starts again at 100 ms when the process had run 60 s.
/// - The 5th failure within 60 s makes the plugin `failed`: no more restarts until a restart or start request, or
///   a change to its file.
/// - `Restart=always` also restarts after a clean exit, with the same growing delay, but a clean exit does not
///   count towards `failed`: the delay's 30 s ceiling bounds what a plugin that keeps exiting 0 costs.
/// - `Restart=no` never restarts: a failure leaves the plugin `failed`, a clean exit `stopped`.
/// - An exit after a stop request, a restart request, a changed file or shutdown is not a failure.
///
/// Activation: `start` plugins start at ``daemonStarted(now:)`` (or when a later load adds them); a `subscribe`
/// plugin starts the first time a subscription can match a name it provides, and subscriptions never start it
/// again once it has run (its `Restart=` decides after that); `manual` plugins start only on request.
public struct Supervisor: Sendable {
    /// The timings of the restart policy; the defaults are the issue's.
    public struct Timing: Hashable, Sendable {
        /// The first restart delay.
        public var initialDelay: Duration = .milliseconds(100)
        /// The longest restart delay.
        public var maximumDelay: Duration = .seconds(30)
        /// How long a process must run for the delay to start again from `initialDelay`.
        public var resetAfter: Duration = .seconds(60)
        /// The window in which `maximumFailures` failures make a plugin `failed`.
        public var failureWindow: Duration = .seconds(60)
        /// How many failures within `failureWindow` make a plugin `failed`.
        public var maximumFailures = 5
        /// How long after SIGTERM a process gets SIGKILL.
        public var stopTimeout: Duration = .seconds(2)
        /// How many `.spawn` actions one event returns (with nothing queued) and one turn of the owner's loop gets
        /// once some are queued: more starts wait for ``Supervisor/startQueued(now:)``, so thousands of plugins
        /// start over many turns with clients served between them. Four spawns cost heraldd about 3 ms.
        public var spawnsPerTurn = 4

        /// The timings.
        public init() {}
    }

    /// A signal to send to a plugin's process.
    public enum Signal: Hashable, Sendable {
        /// SIGTERM: asks the plugin to exit.
        case terminate
        /// SIGKILL: 2 s after SIGTERM, for a plugin that did not.
        case kill
    }

    /// How important a log line is; the same levels as HeraldPosix's `Logger.Level`.
    public enum LogLevel: Hashable, Sendable {
        case debug
        case info
        case notice
        case warning
        case error
    }

    /// What the owner must do, in the order given.
    public enum Action: Hashable, Sendable {
        /// Start the declaration's program: `executable ?? program` with `command` as arguments, its environment
        /// plus `HERALD_SOCKET` and `HERALD_PLUGIN`, stdin from /dev/null; then report `spawned` or `spawnFailed`.
        case spawn(PluginDeclaration)
        /// Send the signal to the process.
        case signal(pid: Int32, Signal)
        /// Call ``timerFired(now:)`` at this instant; replaces any earlier request.
        case wakeAt(Instant)
        /// Post the status, retained, as `herald.plugin.NAME`.
        case publish(name: String, PluginStatus)
        /// The plugin is gone from the catalog: clear the retained `herald.plugin.NAME` (an empty retained post).
        case unpublish(name: String)
        /// Write a line to the daemon's log.
        case log(LogLevel, String)
        /// Shutdown is over: every plugin process has exited. The daemon may exit.
        case shutdownComplete
        /// More plugins are waiting to start than one turn spawns: call ``startQueued(now:)`` on a later turn, once
        /// what else is ready has been served.
        case continueStarting
    }

    /// One plugin's state; cases carry their data.
    enum State: Hashable, Sendable {
        /// Loaded, never started.
        case inactive
        /// Due to start, waiting for its turn (``startQueued(now:)``); no process.
        case queued
        /// `.spawn` returned; waiting for `spawned` or `spawnFailed`.
        case spawning
        case running(pid: Int32, startedAt: Instant)
        /// Waiting out the backoff before a restart.
        case waiting(until: Instant)
        /// SIGTERM sent; SIGKILL due at `killAt` unless already sent (nil). `then` is what follows the exit.
        case stopping(pid: Int32, startedAt: Instant, killAt: Instant?, then: AfterStop)
        case failed
        case stopped
        case refused(reason: String)
    }

    /// What a plugin becomes once the process being stopped has exited.
    enum AfterStop: Hashable, Sendable {
        case stop
        /// Start it again at once: a restart request or a changed file.
        case start
        /// Its file is gone: forget it.
        case remove
        /// Its file is now refused.
        case refuse(reason: String, path: String)
    }

    /// Everything the machine knows of one plugin.
    struct Plugin: Sendable {
        /// The declaration, or nil for a refused file.
        var declaration: PluginDeclaration?
        var file: String
        var state: State
        var restarts = 0
        var lastExit: String?
        /// When the visible state last changed.
        var since: Instant
        /// Failures within the failure window, oldest first.
        var failures: [Instant] = []
        /// The next restart waits `initialDelay` times 2 to this power (until `maximumDelay`).
        var backoffStep = 0
        /// What was last published, to publish only changes.
        var published: PluginStatus?
    }

    /// The policy's timings.
    public let timing: Timing
    var plugins = PluginTable()
    /// The restarts and SIGKILLs due later; the first is always current after an event.
    var deadlines = DeadlineHeap()
    /// The `subscribe` plugins that have never run, which a subscription may start.
    var awaitingSubscription: Set<String> = []
    /// The same plugins by the first segment of each of their `Provides=` patterns (nil: a wildcard or `**`
    /// first), so a subscription looks only at those it could start; and the keys each was filed under.
    var awaitingByFirstSegment: [String?: Set<String>] = [:]
    var awaitingKeys: [String: [String?]] = [:]
    /// Running plugins whose file changed, waiting in `startQueue` for their turn to be restarted.
    var pendingRestarts: Set<String> = []
    /// Plugins in `.queued`, and running ones in `pendingRestarts`, oldest first, from `queueHead` on (an entry
    /// whose plugin has moved on is skipped).
    var startQueue: [String] = []
    var queueHead = 0
    /// How many more `.spawn` actions may be returned before the owner's next ``startQueued(now:)``.
    var spawnBudget: Int
    /// Whether `.continueStarting` was returned and ``startQueued(now:)`` has not been called since.
    var hasAskedToContinue = false
    var namesByPID: [Int32: String] = [:]
    var hasDaemonStarted = false
    var isShuttingDown = false
    var hasCompletedShutdown = false
    /// The last `.wakeAt` returned and not yet fired, so an unchanged deadline is not requested twice.
    var requestedWake: Instant?
    /// Plugins forgotten during this event, to unpublish at its end.
    var forgotten: [String] = []

    /// Creates a supervisor with no plugins; feed it ``loaded(_:refused:subscriptions:now:)`` first.
    public init(timing: Timing = Timing()) {
        precondition(timing.spawnsPerTurn > 0, "supervisor: spawnsPerTurn must be positive")
        self.timing = timing
        spawnBudget = timing.spawnsPerTurn
    }

    /// The status of every plugin the machine knows, loaded or refused, by name.
    public var statuses: [String: PluginStatus] {
        plugins.entries.reduce(into: [:]) { result, entry in result[entry.key] = status(of: entry.value) }
    }

    /// The status of the plugin called `name`, or nil when there is none.
    public func status(of name: String) -> PluginStatus? {
        plugins[name].map(status(of:))
    }

    /// The earliest instant at which the machine has something to do (a restart, a SIGKILL), or nil.
    public var nextDeadline: Instant? { deadlines.first?.at }

    /// Whether the deadline `at` for `name` is still its plugin's: it waits to restart then, or is due a SIGKILL.
    func isCurrent(_ at: Instant, for name: String) -> Bool {
        switch plugins[name]?.state {
        case .waiting(let until): until == at
        case .stopping(_, _, let killAt?, _): killAt == at
        default: false
        }
    }

    /// The name of the plugin whose process has `pid`, for the owner's `SO_PEERCRED` bookkeeping and log prefixes.
    public func plugin(withPID pid: Int32) -> String? { namesByPID[pid] }

    func status(of plugin: Plugin) -> PluginStatus {
        let (state, pid): (PluginStatus.State, Int32?) =
            switch plugin.state {
            case .inactive: (.inactive, nil)
            case .queued, .spawning, .waiting: (.starting, nil)
            case .running(let pid, _): (.running, pid)
            case .stopping(let pid, _, _, _): (.stopping, pid)
            case .failed: (.failed, nil)
            case .stopped: (.stopped, nil)
            case .refused: (.refused, nil)
            }
        var reason: String?
        if case .refused(let why) = plugin.state { reason = why }
        return PluginStatus(
            state: state,
            pid: pid,
            restarts: plugin.restarts,
            lastExit: plugin.lastExit,
            since: plugin.since,
            file: plugin.file,
            provides: plugin.declaration?.provides.map(\.text) ?? [],
            activation: plugin.declaration?.activation,
            reason: reason
        )
    }

    /// Ends every event: publishes what changed, unpublishes what was forgotten, and asks for the next wake-up. It
    /// looks only at the plugins this event wrote, so an event costs O(log n) in the number of plugins, beyond what
    /// it does to the plugins it names.
    mutating func finish(_ actions: inout [Action], now: Instant) {
        for name in plugins.takeChanged() {
            guard var plugin = plugins[name] else {
                stopAwaiting(name)
                continue
            }
            if plugin.state == .inactive, let declaration = plugin.declaration, declaration.activation == .subscribe {
                startAwaiting(name, provides: declaration.provides)
            } else {
                stopAwaiting(name)
            }
            if case .running = plugin.state {
            } else {
                // It left running some other way (an exit, a stop): it starts with its new file anyway.
                pendingRestarts.remove(name)
            }
            var current = status(of: plugin)
            if current.state != plugin.published?.state {
                plugin.since = now
                current.since = now
            }
            guard current != plugin.published else { continue }
            plugin.published = current
            plugins[name] = plugin
            actions.append(.publish(name: name, current))
        }
        _ = plugins.takeChanged()
        for name in forgotten where plugins[name] == nil {
            actions.append(.unpublish(name: name))
        }
        forgotten = []
        while let first = deadlines.first, !isCurrent(first.at, for: first.name) { deadlines.popFirst() }
        if let deadline = nextDeadline, deadline != requestedWake {
            requestedWake = deadline
            actions.append(.wakeAt(deadline))
        }
        // With nothing queued the next event gets a full share: the owner bounds how many events one turn holds
        // (heraldd reaps a bounded number of exits a turn), so a turn's spawns stay bounded.
        if queueHead == startQueue.count {
            startQueue.removeAll(keepingCapacity: true)
            queueHead = 0
            spawnBudget = timing.spawnsPerTurn
        } else if !hasAskedToContinue && !isShuttingDown {
            hasAskedToContinue = true
            actions.append(.continueStarting)
        }
        if isShuttingDown && !hasCompletedShutdown && namesByPID.isEmpty {
            hasCompletedShutdown = true
            actions.append(.log(.notice, "every plugin has exited"))
            actions.append(.shutdownComplete)
        }
    }

    /// Files `name` as a plugin a subscription may start, under the first segment of each pattern it provides.
    private mutating func startAwaiting(_ name: String, provides: [Pattern]) {
        let keys = provides.map { pattern -> String? in
            if case .literal(let first)? = pattern.segments.first { return first }
            return nil
        }
        guard awaitingKeys[name] != keys else { return }
        stopAwaiting(name)
        awaitingSubscription.insert(name)
        awaitingKeys[name] = keys
        for key in keys { awaitingByFirstSegment[key, default: []].insert(name) }
    }

    private mutating func stopAwaiting(_ name: String) {
        guard awaitingSubscription.remove(name) != nil, let keys = awaitingKeys.removeValue(forKey: name) else {
            return
        }
        for key in keys {
            awaitingByFirstSegment[key]?.remove(name)
            if awaitingByFirstSegment[key]?.isEmpty == true { awaitingByFirstSegment[key] = nil }
        }
    }

    /// The plugins awaiting a subscription that `pattern` could start: those providing under its first segment
    /// and those whose patterns begin with a wildcard; every one for a pattern that itself begins with one.
    func awaitingCandidates(for pattern: Pattern) -> [String] {
        guard case .literal(let first)? = pattern.segments.first else { return awaitingSubscription.sorted() }
        let named = awaitingByFirstSegment[first] ?? []
        return named.union(awaitingByFirstSegment[nil] ?? []).sorted()
    }

    /// The owner's next turn for the plugins waiting to start (after `.continueStarting`): up to
    /// ``Timing/spawnsPerTurn`` of them are spawned, or stopped to restart with a changed file, oldest first.
    public mutating func startQueued(now: Instant) -> [Action] {
        hasAskedToContinue = false
        spawnBudget = timing.spawnsPerTurn
        var actions: [Action] = []
        while spawnBudget > 0 && queueHead < startQueue.count {
            let name = startQueue[queueHead]
            queueHead += 1
            guard !isShuttingDown, let state = plugins[name]?.state else { continue }
            if state == .queued {
                spawn(name, &actions)
            } else if case .running = state, pendingRestarts.remove(name) != nil {
                spawnBudget -= 1
                actions.append(.log(.info, "plugin \(name): its file changed; restarting it"))
                end(name, then: .start, now: now, &actions)
            }
        }
        finish(&actions, now: now)
        return actions
    }
}
