extension Supervisor {
    /// `herald plugins start NAME`: starts the plugin unless it is running. From `failed` this clears the failure
    /// count, as a restart does; while it is stopping, it starts again once the old process has exited.
    public mutating func startRequested(_ name: String, now: Instant) -> [Action] {
        var actions: [Action] = []
        guard let plugin = requestedPlugin(name, "start", &actions) else { return actions }
        switch plugin.state {
        case .inactive, .stopped, .failed, .waiting:
            actions.append(.log(.info, "plugin \(name): starting on request"))
            clearFailures(name)
            spawn(name, &actions)
        case .stopping(let pid, let startedAt, let killAt, _):
            plugins[name]!.state = .stopping(pid: pid, startedAt: startedAt, killAt: killAt, then: .start)
        case .running:
            actions.append(.log(.info, "plugin \(name): already running"))
        case .queued:
            actions.append(.log(.info, "plugin \(name): already starting"))
        case .refused(let reason):
            actions.append(.log(.warning, "plugin \(name) cannot start: its file is refused: \(reason)"))
        case .spawning:
            preconditionFailure("supervisor: start of \(name) while its spawn is unanswered")
        }
        finish(&actions, now: now)
        return actions
    }

    /// `herald plugins stop NAME`: SIGTERM, then SIGKILL 2 s later if it is still running; a pending restart is
    /// cancelled. The plugin ends `stopped`, and its exit is not a failure.
    public mutating func stopRequested(_ name: String, now: Instant) -> [Action] {
        var actions: [Action] = []
        guard let plugin = requestedPlugin(name, "stop", &actions) else { return actions }
        switch plugin.state {
        case .running, .stopping, .waiting, .queued:
            actions.append(.log(.info, "plugin \(name): stopping on request"))
            end(name, then: .stop, now: now, &actions)
        case .inactive, .stopped, .failed, .refused:
            actions.append(.log(.info, "plugin \(name): not running"))
        case .spawning:
            preconditionFailure("supervisor: stop of \(name) while its spawn is unanswered")
        }
        finish(&actions, now: now)
        return actions
    }

    /// `herald plugins restart NAME`: clears `failed` and the failure count, then starts the plugin, stopping
    /// its running process first.
    public mutating func restartRequested(_ name: String, now: Instant) -> [Action] {
        var actions: [Action] = []
        guard let plugin = requestedPlugin(name, "restart", &actions) else { return actions }
        clearFailures(name)
        switch plugin.state {
        case .running, .stopping:
            actions.append(.log(.info, "plugin \(name): restarting on request"))
            end(name, then: .start, now: now, &actions)
        case .inactive, .stopped, .failed, .waiting:
            actions.append(.log(.info, "plugin \(name): starting on request"))
            spawn(name, &actions)
        case .queued:
            actions.append(.log(.info, "plugin \(name): already starting"))
        case .refused(let reason):
            actions.append(.log(.warning, "plugin \(name) cannot start: its file is refused: \(reason)"))
        case .spawning:
            preconditionFailure("supervisor: restart of \(name) while its spawn is unanswered")
        }
        finish(&actions, now: now)
        return actions
    }

    /// The daemon got SIGTERM or SIGINT: every running plugin gets SIGTERM, and SIGKILL 2 s later if still there.
    /// `.shutdownComplete` follows, in this event's actions or an exit's, once no plugin process is left. After
    /// this nothing starts.
    public mutating func shutdownBegan(now: Instant) -> [Action] {
        var actions: [Action] = []
        guard !isShuttingDown else { return actions }
        isShuttingDown = true
        actions.append(.log(.notice, "stopping \(namesByPID.count) plugin(s)"))
        for name in plugins.names.sorted() {
            switch plugins[name]!.state {
            case .running, .stopping, .waiting, .queued:
                end(name, then: .stop, now: now, &actions)
            case .spawning:
                preconditionFailure("supervisor: shutdown while the spawn of \(name) is unanswered")
            case .inactive, .failed, .stopped, .refused:
                break
            }
        }
        finish(&actions, now: now)
        return actions
    }

    /// The plugin a request names, or nil after logging why there is none to act on: shutdown, no such name, or
    /// a plugin whose process is ending because its file is gone or refused (it is only waiting to be forgotten).
    private func requestedPlugin(_ name: String, _ verb: String, _ actions: inout [Action]) -> Plugin? {
        if isShuttingDown {
            actions.append(.log(.warning, "cannot \(verb) plugin \(name): shutting down"))
            return nil
        }
        guard let plugin = plugins[name] else {
            actions.append(.log(.warning, "no plugin named \(name) to \(verb)"))
            return nil
        }
        if case .stopping(_, _, _, let then) = plugin.state {
            switch then {
            case .remove:
                actions.append(.log(.warning, "cannot \(verb) plugin \(name): its file is gone"))
                return nil
            case .refuse(let reason, _):
                actions.append(.log(.warning, "cannot \(verb) plugin \(name): its file is refused: \(reason)"))
                return nil
            case .stop, .start:
                break
            }
        }
        return plugin
    }
}
