import HeraldPlugins
import HeraldWire
import Testing

/// A supervisor, a clock the test moves by hand, and readers for the actions an event returns.
struct SupervisorHarness {
    var supervisor: Supervisor
    var now = Instant(nanoseconds: 1_000_000_000_000)
    private var nextPID: Int32 = 100

    init(timing: Supervisor.Timing = Supervisor.Timing()) {
        supervisor = Supervisor(timing: timing)
    }

    static func plugin(
        _ name: String,
        _ activation: Activation = .start,
        restart: RestartPolicy = .onFailure,
        provides: [String] = [],
        command: [String] = ["/usr/bin/true"]
    ) -> PluginDeclaration {
        PluginDeclaration(
            name: name,
            path: "/u/\(name).plugin",
            command: command,
            provides: provides.map { try! Pattern($0) },
            activation: activation,
            restart: restart
        )
    }

    mutating func advance(by duration: Duration) {
        now = now + duration
    }

    mutating func load(
        _ declarations: [PluginDeclaration],
        refused: [PluginCatalog.Refusal] = []
    ) -> [Supervisor
        .Action]
    {
        supervisor.loaded(declarations, refused: refused, now: now)
    }

    /// Answers a `.spawn` with a fresh pid, returning it.
    mutating func spawned(_ name: String) -> Int32 {
        nextPID += 1
        let actions = supervisor.spawned(name, pid: nextPID, now: now)
        #expect(actions.published[name]?.state == .running)
        return nextPID
    }

    /// Loads `declarations`, starts the daemon and answers every spawn; returns the pids by name.
    mutating func startAll(_ declarations: [PluginDeclaration]) -> [String: Int32] {
        _ = load(declarations)
        let spawns = supervisor.daemonStarted(now: now).spawns
        return Dictionary(uniqueKeysWithValues: spawns.map { ($0, spawned($0)) })
    }

    mutating func exited(_ pid: Int32, _ status: ProcessExit) -> [Supervisor.Action] {
        supervisor.exited(pid: pid, status: status, now: now)
    }

    /// Moves the clock to the last requested wake-up and fires the timer.
    mutating func fireTimer(at instant: Instant) -> [Supervisor.Action] {
        now = instant
        return supervisor.timerFired(now: now)
    }

    func state(_ name: String) -> PluginStatus.State? { supervisor.status(of: name)?.state }
}

extension Array where Element == Supervisor.Action {
    /// The names of the plugins to spawn.
    var spawns: [String] {
        compactMap { action in
            if case .spawn(let declaration) = action { declaration.name } else { nil }
        }
    }

    /// Each signal as "terminate 101" or "kill 101".
    var signals: [String] {
        compactMap { action in
            guard case .signal(let pid, let signal) = action else { return nil }
            return "\(signal) \(pid)"
        }
    }

    /// The last status published for each name.
    var published: [String: PluginStatus] {
        reduce(into: [:]) { result, action in
            if case .publish(let name, let status) = action { result[name] = status }
        }
    }

    /// Every publication, as "name state".
    var publications: [String] {
        compactMap { action in
            guard case .publish(let name, let status) = action else { return nil }
            return "\(name) \(status.state)"
        }
    }

    var unpublished: [String] {
        compactMap { action in
            if case .unpublish(let name) = action { name } else { nil }
        }
    }

    /// The wake-up requested, if any.
    var wake: Instant? {
        compactMap { action in
            if case .wakeAt(let instant) = action { instant } else { nil }
        }.last
    }

    var logs: [String] {
        compactMap { action in
            if case .log(_, let line) = action { line } else { nil }
        }
    }

    var completesShutdown: Bool { contains(.shutdownComplete) }
}
