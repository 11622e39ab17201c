public import HeraldWire

extension Supervisor {
    /// The plugin folders were read: at startup, on `herald plugins reload` and on SIGHUP.
    ///
    /// New plugins start as their activation says; a plugin whose file is gone (or masked) is stopped and
    /// forgotten; a plugin whose declaration changed is restarted if it was running, waiting to restart or failed;
    /// a newly refused file stops its plugin and shows the reason. Unchanged plugins are left alone. Each new or
    /// changed refusal is logged once, naming the file and the reason.
    ///
    /// - Parameters:
    ///   - declarations: the catalog's declarations, names unique.
    ///   - refused: the catalog's refusals.
    ///   - subscriptions: the patterns subscribed now, so a `subscribe` plugin added by a reload starts when a
    ///     live subscription already wants it. Empty at startup.
    ///   - now: the monotonic time.
    public mutating func loaded(
        _ declarations: [PluginDeclaration],
        refused: [PluginCatalog.Refusal],
        subscriptions: [Pattern] = [],
        now: Instant
    ) -> [Action] {
        var actions: [Action] = []
        guard !isShuttingDown else { return [.log(.info, "plugin folders not reloaded: shutting down")] }
        let wanted = Dictionary(declarations.map { ($0.name, $0) }) { first, _ in
            preconditionFailure("supervisor: two declarations named \(first.name)")
        }
        let refusals = Dictionary(refused.map { ($0.name, $0) }) { first, _ in first }
        for name in plugins.names.sorted() where wanted[name] == nil && refusals[name] == nil {
            actions.append(.log(.info, "plugin \(name): its file is gone or masked"))
            end(name, then: .remove, now: now, &actions)
        }
        for name in Set(wanted.keys).union(refusals.keys).sorted() {
            if let declaration = wanted[name] {
                load(declaration, subscriptions: subscriptions, now: now, &actions)
            } else if let refusal = refusals[name] {
                refuse(refusal, now: now, &actions)
            }
        }
        finish(&actions, now: now)
        return actions
    }

    /// ``loaded(_:refused:subscriptions:now:)`` with a catalog's declarations and refusals.
    public mutating func loaded(_ catalog: PluginCatalog, subscriptions: [Pattern] = [], now: Instant) -> [Action] {
        loaded(catalog.declarations, refused: catalog.refused, subscriptions: subscriptions, now: now)
    }

    /// The daemon is serving: `Activation=start` plugins start.
    public mutating func daemonStarted(now: Instant) -> [Action] {
        precondition(!hasDaemonStarted, "supervisor: the daemon started twice")
        hasDaemonStarted = true
        var actions: [Action] = []
        for name in plugins.names.sorted() { activateIfDue(name, subscriptions: [], now: now, &actions) }
        finish(&actions, now: now)
        return actions
    }

    /// A connection subscribed to `pattern`: each `subscribe` plugin that has never run and provides a name the
    /// pattern can match starts now. The subscription is not held up: the plugin's posts reach it when made.
    public mutating func subscribed(_ pattern: Pattern, now: Instant) -> [Action] {
        // Every SUBSCRIBE comes here while some subscribe plugin has never run: it looks only at the plugins filed
        // under the pattern's first segment (and those whose patterns begin with a wildcard).
        guard awaitsSubscriptions else { return [] }
        var actions: [Action] = []
        for name in awaitingCandidates(for: pattern) {
            activateIfDue(name, subscriptions: [pattern], now: now, &actions)
        }
        finish(&actions, now: now)
        return actions
    }

    /// Whether some `subscribe` plugin has never run, so a subscription could start it. When false the owner may
    /// skip ``subscribed(_:now:)``.
    public var awaitsSubscriptions: Bool {
        !isShuttingDown && !awaitingSubscription.isEmpty
    }

    /// Starts `name` if it has never run and its activation says now: `start` once the daemon has started,
    /// `subscribe` when one of `subscriptions` overlaps its `Provides=`.
    mutating func activateIfDue(_ name: String, subscriptions: [Pattern], now: Instant, _ actions: inout [Action]) {
        guard !isShuttingDown, let plugin = plugins[name], plugin.state == .inactive,
            let declaration = plugin.declaration
        else { return }
        switch declaration.activation {
        case .start:
            guard hasDaemonStarted else { return }
            actions.append(.log(.info, "plugin \(name): starting (Activation=start)"))
        case .subscribe:
            guard let pattern = subscriptions.first(where: { s in declaration.provides.contains { $0.overlaps(s) } })
            else { return }
            actions.append(.log(.info, "plugin \(name): starting for a subscription to \(pattern.text)"))
        case .manual:
            return
        }
        spawn(name, &actions)
    }

    private mutating func load(
        _ declaration: PluginDeclaration,
        subscriptions: [Pattern],
        now: Instant,
        _ actions: inout [Action]
    ) {
        let name = declaration.name
        guard var plugin = plugins[name] else {
            plugins[name] = Plugin(declaration: declaration, file: declaration.path, state: .inactive, since: now)
            activateIfDue(name, subscriptions: subscriptions, now: now, &actions)
            return
        }
        guard plugin.declaration != declaration else { return }
        let wasRefused = plugin.declaration == nil
        plugin.declaration = declaration
        plugin.file = declaration.path
        plugins[name] = plugin
        switch plugin.state {
        case .running:
            // A reload of thousands of changed files stops them a turn's share at a time, as starts go.
            guard spawnBudget > 0 else {
                pendingRestarts.insert(name)
                startQueue.append(name)
                return
            }
            spawnBudget -= 1
            actions.append(.log(.info, "plugin \(name): its file changed; restarting it"))
            end(name, then: .start, now: now, &actions)
        case .stopping(let pid, let startedAt, let killAt, let then):
            // A plugin on its way out for a removed or refused file is wanted again; a stop request still holds.
            let next: AfterStop = then == .stop ? .stop : .start
            plugins[name]!.state = .stopping(pid: pid, startedAt: startedAt, killAt: killAt, then: next)
        case .queued:
            // It starts with the new declaration when its turn comes.
            clearFailures(name)
        case .waiting, .failed:
            actions.append(.log(.info, "plugin \(name): its file changed; starting it afresh"))
            clearFailures(name)
            spawn(name, &actions)
        case .refused, .inactive:
            if wasRefused { actions.append(.log(.info, "plugin \(name): \(declaration.path) is no longer refused")) }
            plugins[name]!.state = .inactive
            activateIfDue(name, subscriptions: subscriptions, now: now, &actions)
        case .stopped:
            break
        case .spawning:
            preconditionFailure("supervisor: \(name) reloaded while its spawn is unanswered")
        }
    }

    private mutating func refuse(_ refusal: PluginCatalog.Refusal, now: Instant, _ actions: inout [Action]) {
        let name = refusal.name
        if let plugin = plugins[name], plugin.state == .refused(reason: refusal.reason), plugin.file == refusal.path {
            return
        }
        actions.append(.log(.warning, "plugin file \(refusal.path) refused: \(refusal.reason)"))
        guard plugins[name] != nil else {
            plugins[name] = Plugin(file: refusal.path, state: .refused(reason: refusal.reason), since: now)
            return
        }
        end(name, then: .refuse(reason: refusal.reason, path: refusal.path), now: now, &actions)
    }
}
