import ChatCore
import Foundation
import Testing

/// The room driven event by event, with the lines it sends decoded back for readable assertions.
@Suite struct RoomTests {
    private let now = Date(timeIntervalSinceReferenceDate: 800_000_000)
    private let a = Room.ListenerID(1)
    private let b = Room.ListenerID(2)
    private let c = Room.ListenerID(3)

    /// Each send as (recipients, line text without CRLF); disconnects as ([id], "disconnect").
    private func readable(_ actions: [Room.Action]) -> [(to: [Room.ListenerID], text: String)] {
        actions.map { action in
            switch action {
            case .send(let line, let to):
                switch ChatLine(decoding: line.dropLast(2)) {
                case .status(let status): (to, "status \(status.activeUsers)")
                case .message(let message): (to, "\(message.user ?? "*") \(message.message)")
                case .unknown(let text): (to, "unknown \(text)")
                }
            case .disconnect(let id, _):
                ([id], "disconnect")
            }
        }
    }

    private func post(_ room: inout Room, _ user: String?, _ text: String) -> (Room.PostOutcome, [Room.Action]) {
        room.messagePosted(Message(user: user, message: text, date: .distantPast), now: now)
    }

    @Test func aJoinerGetsStatusThenHistoryThenEveryoneGetsConnected() {
        var room = Room()
        _ = room.listenerJoined(a, name: "alice", now: now)
        for text in ["one", "two", "three", "four"] { _ = post(&room, "alice", text) }
        let actions = readable(room.listenerJoined(b, name: "bob", now: now))
        #expect(
            actions.map(\.text) == [
                "status 2", "alice two", "alice three", "alice four", "status 2", "* bob connected",
            ]
        )
        #expect(actions.map(\.to) == [[b], [b], [b], [b], [a], [a, b]])
        #expect(room.activeUsers == 2)
    }

    @Test func activeUsersCountsDistinctNamesNow() {
        var room = Room()
        _ = room.listenerJoined(a, name: "alice", now: now)
        let second = readable(room.listenerJoined(b, name: "alice", now: now))
        // The joiner gets the status and the history (the first "alice connected"); the count did not change, so
        // no status goes to the others; then everyone gets the second "alice connected".
        #expect(second.map(\.text) == ["status 1", "* alice connected", "* alice connected"])
        #expect(second.map(\.to) == [[b], [b], [a, b]])
        #expect(room.activeUsers == 1)
        _ = room.listenerJoined(c, name: "bob", now: now)
        #expect(room.activeUsers == 2)
        let leaving = readable(room.listenerLeft(a, now: now))
        #expect(leaving.map(\.text) == ["* alice left"])
        #expect(room.activeUsers == 2)
        let last = readable(room.listenerLeft(b, now: now))
        #expect(last.map(\.text) == ["status 1", "* alice left"])
        #expect(last.map(\.to) == [[c], [c]])
        #expect(room.activeUsers == 1)
    }

    @Test func postsAreStampedWithTheServerTimeAndKeepTheirID() {
        var room = Room()
        _ = room.listenerJoined(a, name: "alice", now: now)
        let id = UUID()
        let (outcome, actions) = room.messagePosted(
            Message(id: id, user: "alice", message: "hi", date: .distantPast),
            now: now
        )
        guard case .accepted(let message) = outcome else {
            Issue.record("not accepted: \(outcome)")
            return
        }
        #expect(message.date == now)
        #expect(message.id == id)
        #expect(readable(actions).map(\.text) == ["alice hi"])
    }

    @Test func presenceIsDeduplicatedPerUser() {
        var room = Room()
        _ = room.listenerJoined(a, name: "bob", now: now)
        #expect(readable(post(&room, nil, "alice went away").1).map(\.text) == ["* alice went away"])
        #expect(post(&room, nil, "alice went away").0 == .duplicatePresence)
        #expect(readable(post(&room, nil, "carol went away").1).map(\.text) == ["* carol went away"])
        #expect(readable(post(&room, nil, "alice came back").1).map(\.text) == ["* alice came back"])
        #expect(post(&room, nil, "alice came back").0 == .duplicatePresence)
        // A user message with the same words is just a message.
        #expect(readable(post(&room, "alice", "alice came back").1).count == 1)
    }

    @Test func aLatePresenceAnnouncementDoesNotUndoANewerOne() {
        var room = Room()
        _ = room.listenerJoined(a, name: "bob", now: now)
        let awayAt = Date(timeIntervalSinceReferenceDate: 1000)
        let backAt = Date(timeIntervalSinceReferenceDate: 1001)
        func announce(_ text: String, at date: Date) -> (Room.PostOutcome, [Room.Action]) {
            room.messagePosted(Message(user: nil, message: text, date: date), now: now)
        }
        // Two clients of alice report the same two session events; the second client's reports come late.
        #expect(readable(announce("alice went away", at: awayAt).1).map(\.text) == ["* alice went away"])
        #expect(readable(announce("alice came back", at: backAt).1).map(\.text) == ["* alice came back"])
        #expect(announce("alice went away", at: awayAt).0 == .duplicatePresence)
        #expect(announce("alice came back", at: backAt).0 == .duplicatePresence)
        // A later event is announced again; the room shows each transition once.
        let awayAgain = Date(timeIntervalSinceReferenceDate: 1002)
        #expect(readable(announce("alice went away", at: awayAgain).1).map(\.text) == ["* alice went away"])
        #expect(
            room.messages.map(\.message).filter { $0.hasPrefix("alice") } == [
                "alice went away", "alice came back", "alice went away",
            ]
        )
    }

    @Test func historyIsARing() {
        var configuration = Room.Configuration()
        configuration.historyCapacity = 5
        var room = Room(configuration: configuration)
        for index in 0..<20 { _ = post(&room, "alice", "\(index)") }
        #expect(room.messages.map(\.message) == ["15", "16", "17", "18", "19"])
    }

    @Test func aListenerThatStopsReadingIsDisconnectedAndTheOthersAreTold() {
        var configuration = Room.Configuration()
        configuration.listenerBufferLimit = 1_000
        var room = Room(configuration: configuration)
        _ = room.listenerJoined(a, name: "alice", now: now)
        _ = room.listenerJoined(b, name: "bob", now: now)
        // bob drains everything; alice drains nothing.
        room.listenerDrained(b, bytes: room.pendingBytes(of: b)!)
        var dropped: [String] = []
        for index in 0..<50 {
            let actions = readable(post(&room, "bob", "message number \(index)").1)
            room.listenerDrained(b, bytes: room.pendingBytes(of: b) ?? 0)
            dropped += actions.filter { $0.text == "disconnect" || $0.text.hasSuffix("left") }.map(\.text)
        }
        #expect(dropped == ["disconnect", "* alice left"])
        #expect(room.pendingBytes(of: a) == nil)
        #expect(room.listenerIDs == [b])
        #expect(room.activeUsers == 1)
        // A late close of the dropped connection is ignored.
        #expect(room.listenerLeft(a, now: now).isEmpty)
        #expect(room.pendingBytes(of: b)! <= 1_000)
    }
}
