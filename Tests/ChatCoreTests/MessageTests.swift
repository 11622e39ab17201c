import ChatCore
import Foundation
import Testing

@Suite struct MessageTests {
    @Test func encodesAsTheBookServerDoes() throws {
        let id = UUID(uuidString: "6A0C5E5C-2E0B-4F5A-9C1B-6D2C9E7A1B3F")!
        let message = Message(
            id: id,
            user: nil,
            message: "alice went away",
            date: Date(timeIntervalSinceReferenceDate: 817_009_727.5)
        )
        let line = String(decoding: ChatLine.message(message).encoded, as: UTF8.self)
        #expect(
            line == #"{"date":817009727.5,"id":"6A0C5E5C-2E0B-4F5A-9C1B-6D2C9E7A1B3F","message":"alice went away"}"#
                + "\r\n"
        )
    }

    @Test func decodesLowerCaseIDsNullUsersAndReferenceDates() throws {
        let json = #"{"id":"6a0c5e5c-2e0b-4f5a-9c1b-6d2c9e7a1b3f","user":null,"message":"hi","date":817009727.643185}"#
        let message = try Message.decode(json: Array(json.utf8))
        #expect(message.user == nil)
        #expect(message.isSystemMessage)
        #expect(message.id.uuidString == "6A0C5E5C-2E0B-4F5A-9C1B-6D2C9E7A1B3F")
        #expect(abs(message.date.timeIntervalSinceReferenceDate - 817_009_727.643185) < 1e-6)
    }

    @Test(arguments: [
        ("not json", "it is not JSON"),
        (#"{"id":"6A0C5E5C-2E0B-4F5A-9C1B-6D2C9E7A1B3F","message":"hi"}"#, "the key 'date' is missing"),
        (#"{"message":"hi","date":1}"#, "the key 'id' is missing"),
        (#"{"id":"6A0C5E5C-2E0B-4F5A-9C1B-6D2C9E7A1B3F","message":"hi","date":"2024-01-01"}"#, "'date'"),
        (#"{"id":"6A0C5E5C-2E0B-4F5A-9C1B-6D2C9E7A1B3F","user":7,"message":"hi","date":1}"#, "'user'"),
        (#"{"id":"nope","message":"hi","date":1}"#, "'id'"),
    ])
    func rejectsWhatTheBookServerSilentlyDropped(json: String, reason: String) {
        let error = #expect(throws: ChatProtocolError.self) { try Message.decode(json: Array(json.utf8)) }
        #expect(error?.reason.contains(reason) == true, "\(error?.reason ?? "no error")")
    }

    @Test func chatLinesDecodeStatusMessagesAndSkipTheRest() {
        #expect(ChatLine(decoding: Array(#"{"activeUsers":2}"#.utf8)) == .status(ServerStatus(activeUsers: 2)))
        let message = Message(user: "bob", message: "hi", date: Date(timeIntervalSinceReferenceDate: 1))
        let encoded = ChatLine.message(message).encoded.dropLast(2)
        #expect(ChatLine(decoding: encoded) == .message(message))
        #expect(ChatLine(decoding: Array("hello".utf8)) == .unknown("hello"))
    }

    @Test func transcriptShowsStatusUserAndSystemLines() {
        let transcript = Transcript(timeZone: TimeZone(identifier: "UTC")!)
        let date = Date(timeIntervalSince1970: 3_600 * 10 + 60 * 15 + 30)
        #expect(transcript.text(for: .status(ServerStatus(activeUsers: 1))) == "1 active user")
        #expect(transcript.text(for: .status(ServerStatus(activeUsers: 3))) == "3 active users")
        #expect(transcript.text(for: .message(Message(user: "bob", message: "hi", date: date))) == "[10:15:30] bob: hi")
        #expect(
            transcript.text(for: .message(Message(user: nil, message: "alice went away", date: date)))
                == "[10:15:30] * alice went away"
        )
        #expect(transcript.text(for: .unknown("x")) == nil)
    }

    @Test(arguments: [
        ("\u{1B}]0;owned\u{07}\u{1B}[2J", #"\e]0;owned\u{7}\e[2J"#),
        ("hi\n[12:00:00] * alice went away", #"hi\n[12:00:00] * alice went away"#),
        ("a\r\nb\tc", #"a\r\nb\tc"#),
        ("\u{9B}31m C1 CSI, \u{7F} DEL, \u{0} NUL", #"\u{9B}31m C1 CSI, \u{7F} DEL, \u{0} NUL"#),
        ("line\u{2028}sep \u{202E}desrever", #"line\u{2028}sep \u{202E}desrever"#),
        ("plain 😀 text with a \\ backslash", "plain 😀 text with a \\ backslash"),
    ])
    func transcriptEscapesWhatCouldControlTheTerminalOrBreakALine(text: String, shown: String) {
        let transcript = Transcript(timeZone: TimeZone(identifier: "UTC")!)
        let date = Date(timeIntervalSince1970: 0)
        #expect(
            transcript.text(for: .message(Message(user: "bob", message: text, date: date)))
                == "[00:00:00] bob: \(shown)"
        )
        #expect(
            transcript.text(for: .message(Message(user: nil, message: text, date: date))) == "[00:00:00] * \(shown)"
        )
        #expect(
            transcript.text(for: .message(Message(user: text, message: "x", date: date))) == "[00:00:00] \(shown): x"
        )
    }
}

@Suite struct RoomNameTests {
    @Test(arguments: [
        ("Alice", "Alice"),
        ("Alice%20Smith", "Alice Smith"),
        ("Alice+Smith", "Alice Smith"),
        ("user=Dave", "Dave"),
        ("x=1&user=Dave", "Dave"),
        ("%F0%9F%98%80", "😀"),
    ])
    func acceptsTheBookFormAndUserEquals(query: String, name: String) throws {
        #expect(try RoomName.parse(query: query) == name)
    }

    @Test(arguments: [nil, "", "user=", "%20", "%zz", "a%0Ab", String(repeating: "x", count: 65)] as [String?])
    func rejectsUnusableNames(query: String?) {
        #expect(throws: ChatProtocolError.self) { try RoomName.parse(query: query) }
    }
}

@Suite struct HistoryRingTests {
    @Test func keepsTheNewestUpToItsCapacity() {
        var ring = HistoryRing<Int>(capacity: 3)
        #expect(ring.suffix(3).isEmpty)
        for value in 1...5 { ring.append(value) }
        #expect(ring.count == 3)
        #expect(ring.elements == [3, 4, 5])
        #expect(ring.suffix(2) == [4, 5])
        #expect(ring.suffix(10) == [3, 4, 5])
    }
}

@Suite struct PresenceTrackerTests {
    @Test func announcesOnlyChanges() {
        var tracker = PresenceTracker(user: "alice")
        tracker.started(retainedState: nil)
        #expect(tracker.sessionChanged(to: .active) == nil)
        #expect(tracker.sessionChanged(to: .away) == "alice went away")
        #expect(tracker.sessionChanged(to: .away) == nil)
        #expect(tracker.sessionChanged(to: .active) == "alice came back")
    }

    @Test func aClientStartedWhileAwayStartsAway() {
        var tracker = PresenceTracker(user: "alice")
        tracker.started(retainedState: "away")
        #expect(tracker.state == .away)
        #expect(tracker.sessionChanged(to: .away) == nil)
        #expect(tracker.sessionChanged(to: .active) == "alice came back")
    }

    @Test func aTransitionOvertakenByALaterOneIsIgnored() {
        var tracker = PresenceTracker(user: "alice")
        tracker.started(retainedState: "active", sequence: 3)
        // didBecomeActive (12) is handled before willResignActive (11) by the other task: alice is back.
        #expect(tracker.sessionChanged(to: .active, sequence: 12) == nil)
        #expect(tracker.sessionChanged(to: .away, sequence: 11) == nil)
        #expect(tracker.state == .active)
        #expect(tracker.sessionChanged(to: .away, sequence: 13) == "alice went away")
    }

    @Test func parsesAnnouncements() {
        #expect(Presence.parse(announcement: "alice went away")! == ("alice", .away))
        #expect(Presence.parse(announcement: "Alice Smith came back")! == ("Alice Smith", .active))
        #expect(Presence.parse(announcement: " went away") == nil)
        #expect(Presence.parse(announcement: "hello") == nil)
    }
}

@Suite struct BotTests {
    @Test func answersOnceFiveSecondsAfterTheLastUserMessageOfABurst() {
        var bot = Bot(pick: { _ in 1 })
        let start = Date(timeIntervalSinceReferenceDate: 1000)
        bot.messagePosted(Message(user: "alice", message: "hi", date: start), now: start)
        bot.messagePosted(Message(user: "alice", message: "there", date: start), now: start + 3)
        #expect(bot.deadline == start + 8)
        #expect(bot.deadlinePassed(now: start + 5) == nil)
        let reply = bot.deadlinePassed(now: start + 8)
        #expect(reply?.user == Bot.name)
        #expect(reply?.message == Bot.lines[1])
        #expect(bot.deadline == nil)
        #expect(bot.deadlinePassed(now: start + 20) == nil)
    }

    @Test func ignoresSystemMessagesAndItself() {
        var bot = Bot()
        let now = Date()
        bot.messagePosted(Message(user: nil, message: "alice connected"), now: now)
        bot.messagePosted(Message(user: Bot.name, message: "hi"), now: now)
        #expect(bot.deadline == nil)
    }

    @Test func parrotEchoesThePreviousMessage() {
        var bot = Bot()
        let now = Date()
        bot.messagePosted(Message(user: "alice", message: "squawk"), now: now)
        bot.messagePosted(Message(user: "alice", message: "parrot"), now: now)
        #expect(bot.deadlinePassed(now: now + 5)?.message == "🦜 squawk")
    }
}
