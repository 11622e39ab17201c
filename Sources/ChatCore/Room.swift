public import Foundation

/// One chat room's decisions as a state machine with no I/O: who listens, what the history holds, who is away, and
/// what each event makes the server write.
///
/// The owner (the HTTP server) feeds it events and performs the returned ``Action``s in order. The room reads no
/// clock (times come in with the events) and touches no socket. Memory is bounded: the history is a ring, and each
/// listener may have at most ``Configuration/listenerBufferLimit`` bytes written to it and not yet drained; past that
/// it is disconnected, as a listener that stopped reading must not hold the server's memory.
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
        /// A presence announcement repeating the user's known state ("alice went away" while alice is away), or one
        /// older than the last announced: another client of the same user already said it, or said something since.
        /// Nothing is sent.
        case duplicatePresence
    }

    private struct Listener {
        var name: String
        var pendingBytes = 0
    }

    /// The room's limits.
    public let configuration: Configuration
    private var listeners: [ListenerID: Listener] = [:]
    private var connectionsPerName: [String: Int] = [:]
    private var history: HistoryRing<Message>
    /// Each user's presence as last announced, with the date its client gave the announcement.
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

    /// The listeners connected now.
    public var listenerIDs: [ListenerID] {
        listeners.keys.sorted()
    }

    /// The history, oldest first.
    public var messages: [Message] {
        history.elements
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
    public mutating func listenerJoined(_ id: ListenerID, name: String, now: Date) -> [Action] {
        precondition(listeners[id] == nil, "\(id) joined twice")
        let before = activeUsers
        listeners[id] = Listener(name: name)
        connectionsPerName[name, default: 0] += 1
        var actions: [Action] = []
        var overflowed: [ListenerID] = []
        deliver(ChatLine.status(ServerStatus(activeUsers: activeUsers)).encoded, to: [id], &actions, &overflowed)
        for message in history.suffix(configuration.replayCount) {
            deliver(ChatLine.message(message).encoded, to: [id], &actions, &overflowed)
        }
        if activeUsers != before {
            broadcastStatus(except: id, &actions, &overflowed)
        }
        record(Message(id: makeID(), user: nil, message: "\(name) connected", date: now), &actions, &overflowed)
        disconnect(overflowed, reason: overflowReason, now: now, &actions)
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
    /// A presence announcement ("alice went away", a system message) that repeats the user's known state is
    /// dropped: several clients of one user report the same transition, and the room shows it once. So is one whose
    /// date, as the client sent it, is older than the last announced for that user: herald-chat dates an
    /// announcement with the session event's time, the same in every client of the session, so a client that
    /// reports "went away" late, after another has already reported "came back", does not undo it.
    public mutating func messagePosted(_ message: Message, now: Date) -> (PostOutcome, [Action]) {
        var stamped = message
        stamped.date = now
        if stamped.isSystemMessage, let (user, state) = Presence.parse(announcement: stamped.message) {
            if let known = presence[user], known.state == state || message.date < known.date {
                return (.duplicatePresence, [])
            }
            presence[user] = (state, message.date)
        }
        var actions: [Action] = []
        var overflowed: [ListenerID] = []
        record(stamped, &actions, &overflowed)
        disconnect(overflowed, reason: overflowReason, now: now, &actions)
        return (.accepted(stamped), actions)
    }

    // MARK: - Helpers

    private mutating func record(_ message: Message, _ actions: inout [Action], _ overflowed: inout [ListenerID]) {
        history.append(message)
        deliver(ChatLine.message(message).encoded, to: listenerIDs, &actions, &overflowed)
    }

    private mutating func broadcastStatus(
        except excluded: ListenerID?,
        _ actions: inout [Action],
        _ overflowed: inout [ListenerID]
    ) {
        let others = listenerIDs.filter { $0 != excluded }
        deliver(ChatLine.status(ServerStatus(activeUsers: activeUsers)).encoded, to: others, &actions, &overflowed)
    }

    /// Charges `line` to each recipient's buffer; those that would pass the limit are not sent it and are collected
    /// in `overflowed` instead.
    private mutating func deliver(
        _ line: [UInt8],
        to recipients: [ListenerID],
        _ actions: inout [Action],
        _ overflowed: inout [ListenerID]
    ) {
        var accepted: [ListenerID] = []
        for id in recipients {
            guard var entry = listeners[id], !overflowed.contains(id) else {
                continue
            }
            if entry.pendingBytes + line.count > configuration.listenerBufferLimit {
                overflowed.append(id)
                continue
            }
            entry.pendingBytes += line.count
            listeners[id] = entry
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
    private mutating func disconnect(_ ids: [ListenerID], reason: String?, now: Date, _ actions: inout [Action]) {
        var queue = ids.map { (id: $0, reason: reason) }
        while !queue.isEmpty {
            let (id, reason) = queue.removeFirst()
            guard let entry = listeners.removeValue(forKey: id) else {
                continue
            }
            if let reason {
                actions.append(.disconnect(id, reason: reason))
            }
            let before = activeUsers
            connectionsPerName[entry.name, default: 1] -= 1
            if connectionsPerName[entry.name] == 0 {
                connectionsPerName[entry.name] = nil
            }
            var overflowed: [ListenerID] = []
            if activeUsers != before {
                broadcastStatus(except: nil, &actions, &overflowed)
            }
            record(Message(id: makeID(), user: nil, message: "\(entry.name) left", date: now), &actions, &overflowed)
            for dropped in overflowed where !queue.contains(where: { $0.id == dropped }) {
                queue.append((dropped, overflowReason))
            }
        }
    }

    private var overflowReason: String {
        "it stopped reading: \(configuration.listenerBufferLimit) bytes are waiting for it"
    }
}
