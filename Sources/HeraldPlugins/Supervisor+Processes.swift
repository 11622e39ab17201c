extension Supervisor {
    /// The owner spawned `name`'s process, with this pid.
    public mutating func spawned(_ name: String, pid: Int32, now: Instant) -> [Action] {
        guard plugins[name]?.state == .spawning else {
            preconditionFailure("supervisor: spawned \(name) (pid \(pid)), which was not being spawned")
        }
        precondition(namesByPID[pid] == nil, "supervisor: pid \(pid) of \(name) already belongs to a plugin")
        plugins[name]!.state = .running(pid: pid, startedAt: now)
        namesByPID[pid] = name
        var actions: [Action] = [.log(.info, "plugin \(name): running as pid \(pid)")]
        finish(&actions, now: now)
        return actions
    }

    /// The owner could not spawn `name`: a failure like a failed exit, restarted as the policy says; or, when it
    /// can never work as the file stands (`permanent`), `failed` at once.
    ///
    /// - Parameters:
    ///   - reason: why, e.g. "/usr/bin/x: No such file or directory (errno 2)".
    ///   - permanent: whether retrying is pointless until something changes: a missing working directory or
    ///     interpreter. The plugin then fails without restarts, until a request or a change to its file.
    public mutating func spawnFailed(_ name: String, reason: String, permanent: Bool = false, now: Instant) -> [Action]
    {
        guard plugins[name]?.state == .spawning else {
            preconditionFailure("supervisor: spawn of \(name) failed, but it was not being spawned")
        }
        var actions: [Action] = []
        failStart(name, reason: reason, permanent: permanent, now: now, &actions)
        finish(&actions, now: now)
        return actions
    }

    /// The process `pid`, reported ``spawned(_:pid:now:)`` before its exec was known, could not become the
    /// program: as ``spawnFailed(_:reason:permanent:now:)``. Its exit (127) that follows is no plugin's. Nothing
    /// happens for a pid that is no plugin's any more.
    public mutating func execFailed(pid: Int32, reason: String, permanent: Bool, now: Instant) -> [Action] {
        guard let name = namesByPID.removeValue(forKey: pid) else { return [] }
        var actions: [Action] = []
        switch plugins[name]!.state {
        case .running:
            failStart(name, reason: reason, permanent: permanent, now: now, &actions)
        case .stopping(_, _, _, let then):
            plugins[name]!.lastExit = "spawn failed: \(reason)"
            actions.append(.log(.warning, "plugin \(name): spawn failed: \(reason)"))
            settle(name, then: then, &actions)
        default:
            preconditionFailure("supervisor: exec of pid \(pid) of \(name) failed, but \(name) was not running")
        }
        finish(&actions, now: now)
        return actions
    }

    private mutating func failStart(
        _ name: String,
        reason: String,
        permanent: Bool,
        now: Instant,
        _ actions: inout [Action]
    ) {
        plugins[name]!.lastExit = "spawn failed: \(reason)"
        actions.append(.log(.warning, "plugin \(name): spawn failed: \(reason)"))
        if permanent {
            plugins[name]!.state = .failed
            actions.append(
                .log(.error, "plugin \(name): cannot start until this is fixed; not restarting it: \(reason)")
            )
        } else {
            afterExit(name, failure: true, ranFor: nil, now: now, &actions)
        }
    }

    /// A child process ended. A pid that belongs to no plugin is logged and otherwise ignored.
    public mutating func exited(pid: Int32, status: ProcessExit, now: Instant) -> [Action] {
        guard let name = namesByPID.removeValue(forKey: pid) else {
            return [.log(.debug, "pid \(pid) \(status), not a plugin")]
        }
        plugins[name]!.lastExit = status.description
        var actions: [Action] = []
        switch plugins[name]!.state {
        case .running(_, let startedAt):
            let level: LogLevel = status.isFailure ? .warning : .info
            actions.append(.log(level, "plugin \(name): pid \(pid) \(status)"))
            afterExit(name, failure: status.isFailure, ranFor: now - startedAt, now: now, &actions)
        case .stopping(_, _, _, let then):
            actions.append(.log(.info, "plugin \(name): pid \(pid) \(status) after being stopped"))
            settle(name, then: then, &actions)
        default:
            preconditionFailure("supervisor: pid \(pid) of \(name) exited, but \(name) was not running")
        }
        finish(&actions, now: now)
        return actions
    }

    /// The timer asked for by the last `.wakeAt` fired: restarts and SIGKILLs that are due happen.
    public mutating func timerFired(now: Instant) -> [Action] {
        requestedWake = nil
        var actions: [Action] = []
        while let due = deadlines.first, due.at <= now {
            deadlines.popFirst()
            let name = due.name
            guard isCurrent(due.at, for: name) else { continue }
            switch plugins[name]!.state {
            case .waiting:
                plugins[name]!.restarts += 1
                actions.append(.log(.info, "plugin \(name): restarting (restart \(plugins[name]!.restarts))"))
                spawn(name, &actions)
            case .stopping(let pid, let startedAt, _, let then):
                actions.append(.signal(pid: pid, .kill))
                actions.append(
                    .log(
                        .warning,
                        "plugin \(name): pid \(pid) still running \(format(timing.stopTimeout)) after SIGTERM; "
                            + "sent SIGKILL"
                    )
                )
                plugins[name]!.state = .stopping(pid: pid, startedAt: startedAt, killAt: nil, then: then)
            default:
                break
            }
        }
        finish(&actions, now: now)
        return actions
    }

    /// Applies the restart policy to an exit (or failed spawn) the plugin was not asked to make.
    ///
    /// - Parameter ranFor: how long the process ran; nil for a failed spawn.
    private mutating func afterExit(
        _ name: String,
        failure: Bool,
        ranFor: Duration?,
        now: Instant,
        _ actions: inout [Action]
    ) {
        var plugin = plugins[name]!
        let policy = plugin.declaration!.restart
        if let ranFor, ranFor >= timing.resetAfter { plugin.backoffStep = 0 }
        if failure {
            plugin.failures.removeAll { now - $0 >= timing.failureWindow }
            plugin.failures.append(now)
        }
        if failure && policy != .no && plugin.failures.count >= timing.maximumFailures {
            plugin.state = .failed
            actions.append(
                .log(
                    .error,
                    "plugin \(name): failed \(plugin.failures.count) times within \(format(timing.failureWindow)); "
                        + "not restarting it until `herald plugins restart \(name)`"
                )
            )
        } else if policy == .no || (policy == .onFailure && !failure) {
            plugin.state = failure ? .failed : .stopped
        } else {
            let delay = restartDelay(step: plugin.backoffStep)
            plugin.backoffStep += 1
            plugin.state = .waiting(until: now + delay)
            deadlines.push(now + delay, name)
            actions.append(.log(.info, "plugin \(name): restarting in \(format(delay))"))
        }
        plugins[name] = plugin
    }

    /// The delay before the restart after `step` earlier ones: doubling from the initial delay, up to the maximum.
    func restartDelay(step: Int) -> Duration {
        // Past 2^20 times the initial delay the maximum is long reached; stopping there keeps the product in range.
        guard step < 20 else { return timing.maximumDelay }
        return min(timing.initialDelay * (1 << step), timing.maximumDelay)
    }

    /// Makes the plugin's process go, and `name` become what `then` says once it has: sends SIGTERM to a running
    /// process (SIGKILL due `stopTimeout` later), or settles at once when there is no process.
    mutating func end(_ name: String, then: AfterStop, now: Instant, _ actions: inout [Action]) {
        switch plugins[name]!.state {
        case .running(let pid, let startedAt):
            actions.append(.signal(pid: pid, .terminate))
            let killAt = now + timing.stopTimeout
            plugins[name]!.state = .stopping(pid: pid, startedAt: startedAt, killAt: killAt, then: then)
            deadlines.push(killAt, name)
        case .stopping(let pid, let startedAt, let killAt, let previous):
            // A plugin leaving because its file is gone or refused stays on that course through a stop or shutdown;
            // only a reload (which calls with .remove or .refuse, or brings the file back) changes it.
            var next = then
            switch (previous, then) {
            case (.remove, .stop), (.remove, .start), (.refuse, .stop), (.refuse, .start): next = previous
            default: break
            }
            plugins[name]!.state = .stopping(pid: pid, startedAt: startedAt, killAt: killAt, then: next)
        case .spawning:
            preconditionFailure("supervisor: \(name) stopped while its spawn is unanswered")
        case .inactive, .queued, .waiting, .failed, .stopped, .refused:
            settle(name, then: then, &actions)
        }
    }

    /// Makes `name`, which has no process, what `then` says.
    private mutating func settle(_ name: String, then: AfterStop, _ actions: inout [Action]) {
        switch then {
        case .stop:
            plugins[name]!.state = .stopped
        case .start:
            if isShuttingDown {
                plugins[name]!.state = .stopped
            } else {
                spawn(name, &actions)
            }
        case .remove:
            plugins[name] = nil
            forgotten.append(name)
        case .refuse(let reason, let path):
            plugins[name]!.declaration = nil
            plugins[name]!.file = path
            plugins[name]!.state = .refused(reason: reason)
        }
    }

    /// Asks the owner to spawn `name` now, or queues it when this turn's spawns are spent.
    mutating func spawn(_ name: String, _ actions: inout [Action]) {
        guard let declaration = plugins[name]!.declaration else {
            preconditionFailure("supervisor: spawn of \(name), whose file is refused")
        }
        guard spawnBudget > 0 else {
            plugins[name]!.state = .queued
            startQueue.append(name)
            return
        }
        spawnBudget -= 1
        plugins[name]!.state = .spawning
        actions.append(.spawn(declaration))
    }

    /// Forgets `name`'s failures and backoff: a person asked for a fresh start.
    mutating func clearFailures(_ name: String) {
        plugins[name]!.failures = []
        plugins[name]!.backoffStep = 0
    }

    /// "100 ms", "1.6 s", "30 s": a delay as a log line words it.
    func format(_ duration: Duration) -> String {
        let milliseconds = duration.nanoseconds / 1_000_000
        if milliseconds < 1000 { return "\(milliseconds) ms" }
        if milliseconds % 1000 == 0 { return "\(milliseconds / 1000) s" }
        return "\(milliseconds / 1000).\(milliseconds % 1000 / 100) s"
    }
}
