import Foundation
import Herald
import HeraldTestSupport
import HeraldWire
import Testing

/// Posting and observing through a real heraldd, between two connections of this process.
@Suite struct HeraldTests {
    @Test func deliversAPostFromAnotherConnection() async throws {
        try await withDaemon { daemon in
            let observer = try await connect(daemon)
            let poster = try await connect(daemon)
            #expect(observer.daemonPID == daemon.pid)
            #expect(observer.socketPath == daemon.socketPath)
            #expect(observer.maxPayload == 65_536)

            let notifications = try await observer.notifications(matching: "session.willResignActive")
            let before = Date()
            try await poster.post("session.willResignActive", userInfo: ["user": "alice", "reason": "lock"])

            let received = await collect(1, from: notifications)
            let after = Date()
            try #require(received.count == 1)
            let notification = received[0]
            #expect(notification.name == "session.willResignActive")
            #expect(notification.userInfo == ["user": "alice", "reason": "lock"])
            #expect(notification.payload == Array(#"{"reason":"lock","user":"alice"}"#.utf8))
            #expect(notification.isRetained == false)
            #expect(notification.notice == nil)
            #expect(notification.sequence == 1)
            // The daemon's receive time falls between the post and its delivery, however long the whole parallel
            // run made those take (a millisecond either side for Date's rounding).
            #expect(
                notification.time >= before.addingTimeInterval(-0.001)
                    && notification.time <= after.addingTimeInterval(0.001),
                "the daemon's receive time \(notification.time) is not between \(before) and \(after)"
            )
            #expect(notification.timeNanoseconds / 1_000_000_000 == UInt64(notification.time.timeIntervalSince1970))
        }
    }

    @Test func postsWithoutUserInfoSendAnEmptyObject() async throws {
        try await withDaemon { daemon in
            let herald = try await connect(daemon)
            let notifications = try await herald.notifications(matching: "a.b")
            try await herald.post("a.b")
            let received = await collect(1, from: notifications)
            #expect(received.map(\.payload) == [Array("{}".utf8)])
            #expect(received.first?.userInfo == [:])
        }
    }

    @Test func deliversPostsOfOneConnectionInOrder() async throws {
        try await withDaemon { daemon in
            let observer = try await connect(daemon)
            let poster = try await connect(daemon)
            let notifications = try await observer.notifications(matching: "count.up")
            for index in 0..<500 {
                try await poster.post("count.up", userInfo: ["i": .number(Double(index))])
            }
            let received = await collect(500, from: notifications)
            #expect(received.map { $0.userInfo?["i"]?.doubleValue } == (0..<500).map { Double($0) })
            #expect(received.map(\.sequence) == Array(1...500))
        }
    }

    @Test(arguments: [
        ("session.*", ["session.state", "session.didBecomeActive"], ["session", "session.a.b", "other.state"]),
        ("*.state", ["session.state", "x.state"], ["state", "a.b.state", "session.stat"]),
        ("session.**", ["session.a", "session.a.b.c"], ["session", "sessions.a"]),
        ("**", ["a", "b.c", "d.e.f"], []),
    ])
    func routesByPattern(pattern: String, matching: [String], notMatching: [String]) async throws {
        try await withDaemon { daemon in
            let observer = try await connect(daemon)
            let poster = try await connect(daemon)
            let notifications = try await observer.notifications(matching: pattern)
            // Interleaved, so a wrongly delivered name would show up between the expected ones.
            for name in notMatching + matching {
                try await poster.post(name)
            }
            // The end marker proves every earlier post was routed: a name that matched wrongly would be before it.
            let marker = pattern == "**" ? "zz.end" : matching.last!
            try await poster.post(marker)
            let received = await collect(matching.count + 1, from: notifications)
            #expect(received.map(\.name) == matching + [marker])
        }
    }

    @Test func subscriptionIsLiveWhenNotificationsReturns() async throws {
        try await withDaemon { daemon in
            let observer = try await connect(daemon)
            let poster = try await connect(daemon)
            let backlog = [UInt8](repeating: 0x20, count: 60_000)
            for round in 0..<100 {
                // Every other round, the subscriber's own connection carries a backlog the daemon needs several
                // reads to get through, so a SUBSCRIBE not waited for would be processed after the post below.
                if round % 2 == 1 {
                    for _ in 0..<10 { try await observer.post("backlog", payload: backlog) }
                }
                let notifications = try await observer.notifications(matching: "race.\(round)")
                // From ANOTHER connection, immediately: the ACK means the daemon will route this post to us.
                try await poster.post("race.\(round)", userInfo: ["round": .number(Double(round))])
                let received = await collect(1, from: notifications, timeout: .seconds(5))
                try #require(received.count == 1, "round \(round): the post right after the ACK was missed")
                #expect(received[0].userInfo?["round"] == .number(Double(round)))
            }
        }
    }

    @Test func doesNotDeliverPostsProcessedBeforeTheSubscription() async throws {
        try await withDaemon { daemon in
            let herald = try await connect(daemon)
            let everything = try await herald.notifications(matching: "**")
            try await herald.post("early.one")
            // `early.one` reaches this connection for `everything`; the new subscription must not see it.
            let later = try await herald.notifications(matching: "early.*")
            try await herald.post("early.two")
            let received = await collect(1, from: later)
            #expect(received.map(\.name) == ["early.two"])
            #expect(await collect(2, from: everything).map(\.name) == ["early.one", "early.two"])
        }
    }

    @Test func senderIsTheKernelsViewOfThePostingProcess() async throws {
        try await withDaemon { daemon in
            let observer = try await connect(daemon)
            let poster = try await connect(daemon)
            let notifications = try await observer.notifications(matching: "who.am.i")
            // A payload claiming another identity changes nothing: the sender comes from SO_PEERCRED.
            try await poster.post("who.am.i", userInfo: ["pid": 1, "uid": 0, "gid": 0])
            let received = await collect(1, from: notifications)
            try #require(received.count == 1)
            #expect(received[0].sender.pid == getpid())
            #expect(received[0].sender.uid == getuid())
            #expect(received[0].sender.gid == getgid())
        }
    }

    @Test func aClientCannotForgeANotify() async throws {
        try await withDaemon { daemon in
            let observer = try await connect(daemon)
            let notifications = try await observer.notifications(matching: "forged.**")
            // A raw client sends HELLO and then a NOTIFY of its own making, with a made-up sender.
            let forger = try WireClient.ready(socketPath: daemon.socketPath, client: "raw")
            try forger.send(
                .notify(
                    .init(sequence: 1, time: 0, pid: 1, uid: 0, gid: 0, name: "forged.name", payload: Array("{}".utf8))
                )
            )
            // The daemon answers ERROR UNKNOWN_FRAME_TYPE (3) and relays nothing.
            let answer = try forger.receive()
            guard case .error(let error) = answer else {
                Issue.record("expected ERROR, got \(String(describing: answer))")
                return
            }
            #expect(error.code == .unknownFrameType)
            try await observer.flush()
            let poster = try await connect(daemon)
            try await poster.post("forged.real")
            let received = await collect(1, from: notifications)
            #expect(received.map(\.name) == ["forged.real"])
            #expect(received.first?.sender.pid == getpid())
        }
    }

    @Test func typedMessagesRoundTrip() async throws {
        try await withDaemon { daemon in
            let observer = try await connect(daemon)
            let poster = try await connect(daemon)
            let messages = try await observer.messages(of: WillResignActive.self)
            try await poster.post(WillResignActive(user: "alice", reason: "lock"))
            // A payload that is not a WillResignActive is skipped, not delivered, and does not end the sequence.
            try await poster.post(WillResignActive.name, payload: Array("not json".utf8))
            try await poster.post(WillResignActive(user: "bob", reason: nil))
            var received: [WillResignActive] = []
            for await message in messages {
                received.append(message)
                if received.count == 2 { break }
            }
            #expect(received == [WillResignActive(user: "alice", reason: "lock"), WillResignActive(user: "bob")])
        }
    }

    @Test func typedMessagesAreJSONObjectsWithSortedKeys() async throws {
        try await withDaemon { daemon in
            let herald = try await connect(daemon)
            let notifications = try await herald.notifications(matching: WillResignActive.name)
            try await herald.post(WillResignActive(user: "a/b", reason: "idle"))
            let received = await collect(1, from: notifications)
            #expect(
                received.first.map { String(decoding: $0.payload, as: UTF8.self) } == #"{"reason":"idle","user":"a/b"}"#
            )
        }
    }

    @Test func postAcknowledgedAndFlushReturnSequenceNumbers() async throws {
        try await withDaemon { daemon in
            let herald = try await connect(daemon)
            #expect(try await herald.flush() == 0)
            #expect(try await herald.postAcknowledged("seq.a", payload: []) == 1)
            try await herald.post("seq.b")
            try await herald.post("seq.c")
            #expect(try await herald.flush() == 3)
            #expect(try await herald.postAcknowledged("seq.d", payload: Array("{}".utf8)) == 4)
        }
    }
}

/// The typed message of the tests: `session.willResignActive` from Protocols/names.md.
struct WillResignActive: HeraldMessage, Equatable {
    static let name = "session.willResignActive"
    var user: String?
    var reason: String?
}
