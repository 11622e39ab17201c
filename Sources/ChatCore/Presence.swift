/// The presence vocabulary of the chat: the system messages "NAME went away" and "NAME came back" that a client
/// posts when its desktop session resigns or regains activity.
public enum Presence: String, Hashable, Sendable {
    /// The user left the desktop: the screen locked, the screen saver started.
    case away
    /// The user is at the desktop.
    case active

    /// The system message announcing that `user` reached this state: "alice went away" or "alice came back".
    public func announcement(for user: String) -> String {
        switch self {
        case .away: "\(user) went away"
        case .active: "\(user) came back"
        }
    }

    /// Reads a presence announcement: "alice went away" gives `("alice", .away)`.
    ///
    /// - Returns: nil for any other text.
    public static func parse(announcement text: String) -> (user: String, presence: Presence)? {
        for presence in [Presence.away, .active] {
            let suffix = presence.announcement(for: "")
            if text.hasSuffix(suffix), text.count > suffix.count {
                return (String(text.dropLast(suffix.count)), presence)
            }
        }
        return nil
    }
}

/// A chat client's view of its desktop session: whether the user is away, and which transitions to announce.
///
/// The session's notifications can repeat (two hooks, a lock while already locked); only changes are announced.
public struct PresenceTracker: Sendable {
    /// The user the announcements name.
    public let user: String
    /// The session's state as last seen.
    public private(set) var state: Presence = .active
    /// The Herald sequence number of the last notification applied, so that one overtaken by a later one (the two
    /// names are observed by parallel tasks) is ignored instead of undoing it.
    private var lastSequence: UInt64 = 0

    /// Creates a tracker for `user`, assuming the session is active until told otherwise.
    public init(user: String) {
        self.user = user
    }

    /// The session's retained state was read at start-up (`session.state`'s `state` field, or nil when there is
    /// none). A client started while away starts away and announces nothing until the user comes back.
    public mutating func started(retainedState: String?, sequence: UInt64 = 0) {
        state = retainedState == Presence.away.rawValue ? .away : .active
        lastSequence = max(lastSequence, sequence)
    }

    /// The session reported a transition to `presence`.
    ///
    /// - Parameter sequence: the notification's sequence number; one older than the last applied is ignored. 0 (for
    ///   callers without one) is always applied.
    /// - Returns: the announcement to post, or nil when the session was already in that state.
    public mutating func sessionChanged(to presence: Presence, sequence: UInt64 = 0) -> String? {
        if sequence != 0 {
            guard sequence > lastSequence else {
                return nil
            }
            lastSequence = sequence
        }
        guard presence != state else {
            return nil
        }
        state = presence
        return presence.announcement(for: user)
    }
}
