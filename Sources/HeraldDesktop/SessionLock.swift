public import HeraldDBus

/// Whether the user is at the session, from every lock signal there is: logind's `LockedHint` of this session, the
/// screen savers' `ActiveChanged`, and logind's `Lock`/`Unlock` taken as requests.
///
/// The session is away while `LockedHint` is set or any screen saver is active. logind's `Lock` only asks the locker
/// to lock; the locker's answer (`LockedHint`, or a screen saver going active) decides. A `Lock` that no lock follows
/// within the owner's timeout posts nothing: ``lockRequestExpired(_:)`` forgets it and says so once. A repeated
/// signal, or a second lock signal while already away, posts nothing.
///
/// `session.state` is posted retained whenever its payload (state, locked) changes; `session.willResignActive` and
/// `session.didBecomeActive` only when the state itself changes, after it, and only after ``start(at:)``: what the
/// first reading finds is the state, not a transition.
public struct SessionLock: Sendable {
    /// The state a session is in.
    public enum State: String, Sendable {
        case active
        case away
    }

    /// What the owner does after an event.
    public struct Output: Hashable, Sendable {
        /// The posts and refusals.
        public var update = SourceUpdate()
        /// Start a timer that ends with ``lockRequestExpired(_:)`` and this token.
        public var armLockTimeout: Int?
        /// A line to log.
        public var log: String?
    }

    let user: String
    private var lockedHint = false
    private var activeScreenSavers: Set<String> = []
    /// Whether another process (`herald-session-hook lock`, for a locker that tells no one) said the session is away.
    private var awayByOthers = false
    private var pendingLockToken: Int?
    private var nextToken = 1
    private var posted: (state: State, locked: Bool)?
    private var since: String = ""
    /// Until ``start(at:)``, the state is being read: `session.state` follows it, but no transition is announced.
    private var starting = true
    /// Lock requests that no lock followed.
    public private(set) var unansweredLockRequests = 0

    /// A session of `user` (the login name, for the notifications' `user`).
    public init(user: String) {
        self.user = user
    }

    /// The state now.
    public var state: State { lockedHint || awayByOthers || !activeScreenSavers.isEmpty ? .away : .active }

    /// Whether a Lock request waits for the locker's answer.
    public var lockRequestPending: Bool { pendingLockToken != nil }

    /// logind's session properties read in full, or changed (`LockedHint` is taken, the rest ignored).
    public mutating func sessionPropertiesChanged(_ properties: [String: DBusValue], at now: String) -> Output {
        var reader = PropertyReader(properties, of: "org.freedesktop.login1.Session")
        var output = Output()
        if let hint = reader.bool("LockedHint") {
            let wasAway = state
            lockedHint = hint
            output = settle(reason: hint ? "lock" : "unlock", wasAway: wasAway, at: now)
        }
        output.update.refusals += reader.refusals
        return output
    }

    /// A screen saver's `ActiveChanged`, or its `GetActive` answer. `key` names the screen saver (its interface and
    /// path), so that two of them each count.
    public mutating func screenSaverChanged(_ key: String, active: Bool, at now: String) -> Output {
        let was = state
        if active { activeScreenSavers.insert(key) } else { activeScreenSavers.remove(key) }
        return settle(reason: "screensaver", wasAway: was, at: now)
    }

    /// A screen saver left the bus: it is no longer active.
    public mutating func screenSaverLeft(_ key: String, at now: String) -> Output {
        screenSaverChanged(key, active: false, at: now)
    }

    /// logind left the bus: its `LockedHint` no longer holds.
    public mutating func logindLeft(at now: String) -> Output {
        let was = state
        lockedHint = false
        pendingLockToken = nil
        return settle(reason: "unlock", wasAway: was, at: now)
    }

    /// Another process posted `session.state` (`herald-session-hook lock` or `unlock`, for a locker that tells no
    /// one): it announced the change itself, so nothing is posted; its lock holds the session away until it says
    /// `active`, whatever the screen savers do meanwhile.
    public mutating func stateAnnounced(_ announced: State) -> Output {
        awayByOthers = announced == .away
        if !starting { posted = (announced, lockedHint) }
        return Output()
    }

    /// logind asked the locker to lock (`Lock`). Nothing is posted: the owner arms the timeout it returns.
    public mutating func lockRequested() -> Output {
        var output = Output()
        guard state == .active else { return output }
        let token = nextToken
        nextToken += 1
        pendingLockToken = token
        output.armLockTimeout = token
        return output
    }

    /// logind asked the locker to unlock (`Unlock`): a pending Lock request is withdrawn; the locker's answer decides.
    public mutating func unlockRequested() -> Output {
        pendingLockToken = nil
        return Output()
    }

    /// The timeout of the Lock request `token` ran out.
    ///
    /// When no lock followed, the request is forgotten and counted, the state stays active, and one line says so.
    public mutating func lockRequestExpired(_ token: Int) -> Output {
        guard pendingLockToken == token else { return Output() }
        pendingLockToken = nil
        unansweredLockRequests += 1
        var output = Output()
        output.log =
            "logind asked to lock the session, and no locker set LockedHint or started a screen saver: "
            + "the session stays active"
        return output
    }

    /// The posts for the state now, if it differs from the one posted last.
    private mutating func settle(reason: String, wasAway was: State, at now: String) -> Output {
        var output = Output()
        let now = now
        let current = state
        if current == .away { pendingLockToken = nil }
        // While the sources are first read, nothing is posted: a screen saver read as absent before logind is read
        // would retain a state that is not the session's. start(at:) posts what the reading found.
        if starting { return output }
        if let posted, posted.state == current, posted.locked == lockedHint { return output }
        let transition = posted.map { $0.state != current } ?? false
        if posted == nil || transition { since = now }
        posted = (current, lockedHint)
        output.update.posts.append(
            DesktopPost(
                "session.state",
                [
                    "state": .string(current.rawValue), "since": .string(since), "locked": .bool(lockedHint),
                    "reason": .string(reason),
                ],
                retain: true
            )
        )
        if transition {
            let name = current == .away ? "session.willResignActive" : "session.didBecomeActive"
            output.update.posts.append(
                DesktopPost(name, ["user": .string(user), "reason": .string(reason)], retain: false)
            )
        }
        _ = was
        return output
    }

    /// Every source was read once: posts `session.state` as the reading found it, retained before any change, and
    /// from now on a change of state is announced.
    public mutating func start(at now: String) -> Output {
        guard starting else { return Output() }
        starting = false
        return settle(reason: "start", wasAway: state, at: now)
    }
}
