public import Foundation

/// One chat room's decisions as a state machine with no I/O: who listens, what the history holds, who is away, and
/// what each event makes the server write.
///
/// The owner (the HTTP server) feeds it events and performs the returned ``Action``s in order. The room reads no
/// clock (times come in with the events) and touches no socket. Memory is bounded: the history is a ring, and each
/// listener may have at most ``Configuration/listenerBufferLimit`` bytes written to it and not yet drained; past that
/// it is disconnected, as a listener that stopped reading must not hold the server's memory.
///
/// Each event costs O(1) per listener it reaches: a line is encoded once and the recipients are walked once, in join
/// order, so the N joins of N listeners cost O(N²) small steps and nothing more (no sort, no copy per listener).
public struct Room {
    /// Identifies one listening connection (one `GET /chat/room` stream).
    public struct ListenerID: Hashable, Sendable, Comparable, CustomStringConvertible {
        /// The owner's number for the connection.
        public var rawValue: UInt64

        /// Wraps the owner's number.
        public init(_ rawValue: UInt64) {
            self.rawValue = rawValue
        }

        public static func < (lhs: ListenerID, rhs: ListenerID) -> Bool {
            lhs.rawValue < rhs.rawValue
        }

        public var description: String {
            "listener \(rawValue)"
        }
    }

    /// The room's limits.
    public struct Configuration: Sendable {
        /// Messages kept in the history ring.
        public var historyCapacity: Int = 100
        /// Messages replayed to a joining listener (the book: 3).
        public var replayCount: Int = 3
        /// Bytes that may wait undrained for one listener before it is disconnected.
        public var listenerBufferLimit: Int = 256 * 1024

        /// The defaults: a 100-message history, 3 replayed, 256 KiB per listener.
        public init() {}
    }

    /// What the owner must do, in order.
    public enum Action: Hashable, Sendable {
        /// Write `line` (CRLF included) as one chunk to each of `listeners`.
        case send(line: [UInt8], to: [ListenerID])
        /// Close this listener's stream: its buffer is full. The room has already forgotten it.
        case disconnect(ListenerID, reason: String)
    }

    /// How a posted message was handled.
    public enum PostOutcome: Hashable, Sendable {
        /// Added to the history and sent to every listener, with the server's date.
        case accepted(Message)
        /// A system message (no `user`) the room will not vouch for: only presence announcements may be posted as
        /// one, and only from the address of one of the named user's own room streams. Nothing is sent; `reason`
        /// says why, for the poster.
        case forbidden(reason: String)
        /// A presence announcement repeating the user's known state ("alice went away" while alice is away), or one
        /// older than the last announced: another client of the same user already said it, or said something since.
        /// Nothing is sent.
        case duplicatePresence
    }

    private struct Listener {
        var name: String
        var peer: String?
        var pendingBytes = 0
    }

    /// A user name and the address one of its streams comes from.
    private struct NameAndPeer: Hashable {
        var name: String
        var peer: String
    }

    /// The room's limits.
    public let configuration: Configuration
    private var listeners: [ListenerID: Listener] = [:]
    /// The listeners in the order they joined: what broadcasts walk.
    private var joinOrder: [ListenerID] = []
    private var connectionsPerName: [String: Int] = [:]
    /// How many of each user's streams come from each address: who may announce that user's presence.
    private var streamsPerPeer: [NameAndPeer: Int] = [:]
    /// The history, each message with its line as sent: a joiner's replay is not encoded again.
    private var history: HistoryRing<(message: Message, line: [UInt8])>
    /// Each connected user's presence as last announced, with the date its client gave the announcement, bounded by
    /// the server's clock at the time; forgotten when the user's last stream closes.
    private var presence: [String: (state: Presence, date: Date)] = [:]
    private let makeID: @Sendable () -> UUID

    /// Creates an empty room.
    ///
    /// - Parameters:
    ///   - configuration: the limits.
    ///   - makeID: the ids of the room's own system messages; random by default, fixed in tests.
    public init(configuration: Configuration = Configuration(), makeID: @escaping @Sendable () -> UUID = { UUID() }) {
        self.configuration = configuration
        self.history = HistoryRing(capacity: configuration.historyCapacity)
        self.makeID = makeID
    }

    /// The number of distinct names connected now: what `{"activeUsers":N}` says.
    public var activeUsers: Int {
        connectionsPerName.count
    }

    /// The listeners connected now, in the order they joined.
    public var listenerIDs: [ListenerID] {
        joinOrder
    }

    /// The history, oldest first.
    public var messages: [Message] {
        history.elements.map(\.message)
    }

    /// Bytes sent to `listener` and not yet reported drained; nil if it is not connected.
    public func pendingBytes(of listener: ListenerID) -> Int? {
        listeners[listener]?.pendingBytes
    }

    // MARK: - Events

    /// A `GET /chat/room?name` stream opened.
    ///
    /// The joiner gets the status (counting itself), then the last ``Configuration/replayCount`` messages; then
    /// everyone, the joiner included, gets "NAME connected"; the others get the new status if the count changed.
    ///
    /// - Parameters:
    ///   - peer: the address the stream comes from; presence announcements for `name` are accepted from it while
    ///     the stream is open. nil when unknown: then none are.
    public mutating func listenerJoined(_ id: ListenerID, name: String, peer: String? = nil, now: Date) -> [Action] {
        precondition(listeners[id] == nil, "\(id) joined twice")
        let before = activeUsers
        listeners[id] = Listener(name: name, peer: peer)
        joinOrder.append(id)
        connectionsPerName[name, default: 0] += 1
        if let peer {
            streamsPerPeer[NameAndPeer(name: name, peer: peer), default: 0] += 1
        }
        var actions: [Action] = []
        var overflowed: Set<ListenerID> = []
        deliver(ChatLine.status(ServerStatus(activeUsers: activeUsers)).encoded, to: [id], &actions, &overflowed)
        for entry in history.suffix(configuration.replayCount) {
            deliver(entry.line, to: [id], &actions, &overflowed)
        }
        if activeUsers != before {
            broadcastStatus(except: id, &actions, &overflowed)
        }
        record(Message(id: makeID(), user: nil, message: "\(name) connected", date: now), &actions, &overflowed)
        disconnect(overflowed.sorted(), reason: overflowReason, now: now, &actions)
        return actions
    }

    /// A listener's stream closed (the client went away, or the owner closed it). Everyone left gets "NAME left",
    /// and the new status if the count changed.
    ///
    /// An unknown id is ignored: the room may already have dropped it with ``Action/disconnect(_:reason:)``.
    public mutating func listenerLeft(_ id: ListenerID, now: Date) -> [Action] {
        var actions: [Action] = []
        disconnect([id], reason: nil, now: now, &actions)
        return actions
    }

    /// The owner wrote `bytes` of what was sent to `listener` to its socket, so they no longer count against its
    /// buffer. Unknown ids are ignored, as for ``listenerLeft(_:now:)``.
    public mutating func listenerDrained(_ listener: ListenerID, bytes: Int) {
        guard var entry = listeners[listener] else {
            return
        }
        precondition(bytes >= 0 && bytes <= entry.pendingBytes, "\(listener) drained \(bytes) of \(entry.pendingBytes)")
        entry.pendingBytes -= bytes
        listeners[listener] = entry
    }

    /// A `POST /chat/say` carried `message`; the server's `now` replaces its date.
    ///
    /// A system message (no `user`) must be a presence announcement ("alice went away", "alice came back") posted
    /// from the address of one of alice's open room streams, as Blabber and herald-chat post them; anything else
    /// without a user is ``PostOutcome/forbidden(reason:)``, so nobody can make a line look like the room's own.
    ///
    /// An announcement that repeats the user's known state is dropped: several clients of one user report the same
    /// transition, and the room shows it once. So is one whose date is older than the last announced for that user:
    /// herald-chat dates an announcement with the session event's time, the same in every client of the session, so
    /// a client that reports "went away" late, after another has already reported "came back", does not undo it.
    /// The date counts only up to the server's `now`: a client cannot date an announcement in the future and so
    /// make the user's real announcements look older.
    ///
    /// - Parameter peer: the address the post comes from; nil when unknown.
    public mutating func messagePosted(
        _ message: Message,
        from peer: String? = nil,
        now: Date
    ) -> (PostOutcome, [Action]) {
        var stamped = message
        stamped.date = now
        if stamped.isSystemMessage {
            guard let (user, state) = Presence.parse(announcement: stamped.message) else {
                return (
                    .forbidden(
                        reason: "a message without a user is a system message, and only \"NAME went away\" and "
                            + "\"NAME came back\" may be posted as one"
                    ), []
                )
            }
            guard let peer, streamsPerPeer[NameAndPeer(name: user, peer: peer)] != nil else {
                return (
                    .forbidden(
                        reason: "only \(user)'s own client may announce \(user)'s presence: \(user) has no room "
                            + "stream open from this address"
                    ),
                    []
                )
            }
            let date = min(message.date, now)
            if let known = presence[user], known.state == state || date < known.date {
                return (.duplicatePresence, [])
            }
            presence[user] = (state, date)
        }
        var actions: [Action] = []
        var overflowed: Set<ListenerID> = []
        record(stamped, &actions, &overflowed)
        disconnect(overflowed.sorted(), reason: overflowReason, now: now, &actions)
        return (.accepted(stamped), actions)
    }

    // MARK: - Helpers

    private mutating func record(_ message: Message, _ actions: inout [Action], _ overflowed: inout Set<ListenerID>) {
        let line = ChatLine.message(message).encoded
        history.append((message, line))
        deliver(line, to: joinOrder, &actions, &overflowed)
    }

    private mutating func broadcastStatus(
        except excluded: ListenerID?,
        _ actions: inout [Action],
        _ overflowed: inout Set<ListenerID>
    ) {
        let line = ChatLine.status(ServerStatus(activeUsers: activeUsers)).encoded
        deliver(line, to: joinOrder, except: excluded, &actions, &overflowed)
    }

    /// Charges `line` to each recipient's buffer; those that would pass the limit are not sent it and are collected
    /// in `overflowed` instead. O(1) per recipient: a lookup and an append.
    private mutating func deliver(
        _ line: [UInt8],
        to recipients: [ListenerID],
        except excluded: ListenerID? = nil,
        _ actions: inout [Action],
        _ overflowed: inout Set<ListenerID>
    ) {
        var accepted: [ListenerID] = []
        accepted.reserveCapacity(recipients.count)
        for id in recipients where id != excluded {
            guard let index = listeners.index(forKey: id), !overflowed.contains(id) else {
                continue
            }
            if listeners.values[index].pendingBytes + line.count > configuration.listenerBufferLimit {
                overflowed.insert(id)
                continue
            }
            listeners.values[index].pendingBytes += line.count
            accepted.append(id)
        }
        if !accepted.isEmpty {
            actions.append(.send(line: line, to: accepted))
        }
    }

    /// Removes `ids` and tells the rest, repeating while telling the rest overflows more of them. Each round removes
    /// one listener, so this ends.
    ///
    /// - Parameter reason: nil when the owner already closed the listeners (no ``Action/disconnect(_:reason:)``).
    private mutating func disconnect(
        _ ids: some Sequence<ListenerID>,
        reason: String?,
        now: Date,
        _ actions: inout [Action]
    ) {
        var queue = ids.map { (id: $0, reason: reason) }
        while !queue.isEmpty {
            let (id, reason) = queue.removeFirst()
            guard let entry = listeners.removeValue(forKey: id) else {
                continue
            }
            // O(listeners), like the "left" line that follows to every one of them.
            joinOrder.removeAll { $0 == id }
            if let peer = entry.peer {
                let key = NameAndPeer(name: entry.name, peer: peer)
                streamsPerPeer[key, default: 1] -= 1
                if streamsPerPeer[key] == 0 {
                    streamsPerPeer[key] = nil
                }
            }
            if let reason {
                actions.append(.disconnect(id, reason: reason))
            }
            let before = activeUsers
            connectionsPerName[entry.name, default: 1] -= 1
            if connectionsPerName[entry.name] == 0 {
                connectionsPerName[entry.name] = nil
                // Nobody may announce this user's presence now, so its state need not be kept: the map stays as
                // small as the room, however many names come and go.
                presence[entry.name] = nil
            }
            var overflowed: Set<ListenerID> = []
            if activeUsers != before {
                broadcastStatus(except: nil, &actions, &overflowed)
            }
            record(Message(id: makeID(), user: nil, message: "\(entry.name) left", date: now), &actions, &overflowed)
            for dropped in overflowed.sorted() where !queue.contains(where: { $0.id == dropped }) {
                queue.append((dropped, overflowReason))
            }
        }
    }

    private var overflowReason: String {
        "it stopped reading: \(configuration.listenerBufferLimit) bytes are waiting for it"
    }
}
