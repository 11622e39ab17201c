import Foundation
import Herald
import HeraldTestSupport
import HeraldWire
import Testing

/// One stream for several patterns, through a real heraldd: every post once, in the order the daemon sent them.
@Suite struct MultiPatternTests {
    @Test func namesPostedInTurnArriveInTheOrderTheyWerePosted() async throws {
        try await withDaemon { daemon in
            let observer = try await connect(daemon)
            let poster = try await connect(daemon)
            let notifications = try await observer.notifications(matching: ["session.locked", "session.unlocked"])
            var posted: [String] = []
            for index in 0..<400 {
                // Runs of one name and quick alternations, so two streams merged by two tasks would reorder some.
                let name = index % 7 < 3 ? "session.locked" : "session.unlocked"
                posted.append(name)
                try await poster.post(name, userInfo: ["i": .number(Double(index))])
            }
            let received = await collect(400, from: notifications)
            #expect(received.map(\.name) == posted)
            #expect(received.map { $0.userInfo?["i"]?.doubleValue } == (0..<400).map { Double($0) })
            #expect(received.map(\.sequence) == Array(1...400))
        }
    }

    @Test func aPostMatchingSeveralPatternsComesOnce() async throws {
        try await withDaemon { daemon in
            let observer = try await connect(daemon)
            let poster = try await connect(daemon)
            let notifications = try await observer.notifications(matching: ["a.*", "a.b", "a.**", "x"])
            for name in ["a.b", "a.c", "other", "a.b.c", "x", "a.b"] {
                try await poster.post(name)
            }
            try await poster.post("x")  // the end marker: anything delivered twice would come before it
            let received = await collect(6, from: notifications)
            #expect(received.map(\.name) == ["a.b", "a.c", "a.b.c", "x", "a.b", "x"])
            #expect(received.map(\.sequence) == [1, 2, 4, 5, 6, 7])
        }
    }

    @Test func retainedValuesMatchingSeveralPatternsAreReplayedOnce() async throws {
        try await withDaemon { daemon in
            let poster = try await connect(daemon)
            try await poster.postAcknowledged("state.one", payload: Array(#"{"v":1}"#.utf8), retain: true)
            try await poster.postAcknowledged("state.two", payload: Array(#"{"v":2}"#.utf8), retain: true)
            try await poster.postAcknowledged("other.three", payload: Array(#"{"v":3}"#.utf8), retain: true)
            let observer = try await connect(daemon)
            let notifications = try await observer.notifications(
                matching: ["state.one", "state.*", "other.three", "**"]
            )
            try await poster.post("state.one")
            let received = await collect(4, from: notifications)
            // Pattern by pattern: state.one's own value, then what state.* adds, then other.three's; ** adds nothing.
            #expect(received.map(\.name) == ["state.one", "state.two", "other.three", "state.one"])
            #expect(received.map(\.isRetained) == [true, true, true, false])
        }
    }

    @Test func aPatternGivenTwiceIsOneSubscription() async throws {
        try await withDaemon { daemon in
            let observer = try await connect(daemon)
            let notifications = try await observer.notifications(matching: ["twice", "twice", "also"])
            let status = try await observer.status()
            #expect(status.subscriptions == 2)
            try await observer.post("twice")
            #expect(await collect(1, from: notifications).map(\.name) == ["twice"])
        }
    }

    @Test func noPatternAtAllIsAnInvalidPattern() async throws {
        try await withDaemon { daemon in
            let herald = try await connect(daemon)
            let error = await heraldError { _ = try await herald.notifications(matching: [String]()) }
            #expect(error?.code == .invalidPattern)
            let bad = await heraldError { _ = try await herald.notifications(matching: ["fine", "a*"]) }
            #expect(bad?.code == .invalidPattern)
            // Nothing was sent: the connection holds no subscription and still works.
            #expect(try await herald.status().subscriptions == 0)
            #expect(herald.disconnectReason == nil)
        }
    }

    @Test func patternsThatDoNotAllFitAreRefusedBeforeAnyIsSent() async throws {
        try await withDaemon(["--max-subscriptions", "3"]) { daemon in
            let herald = try await connect(daemon)
            let one = try await herald.notifications(matching: "limit.a")
            let error = await heraldError { _ = try await herald.notifications(matching: ["limit.b", "limit.c", "d"]) }
            #expect(error?.code == .tooManySubscriptions)
            #expect(error?.message.contains("need 3") == true, "\(error?.message ?? "")")
            #expect(try await herald.status().subscriptions == 1)
            // Two still fit, and the connection never saw TOO_MANY_SUBSCRIPTIONS.
            let two = try await herald.notifications(matching: ["limit.b", "limit.c"])
            try await herald.post("limit.c")
            #expect(await collect(1, from: two).map(\.name) == ["limit.c"])
            #expect(herald.disconnectReason == nil)
            withExtendedLifetime(one) {}
        }
    }

    @Test func cancellingTheConsumerWithdrawsEveryPattern() async throws {
        try await withDaemon { daemon in
            let observer = try await connect(daemon)
            let poster = try await connect(daemon)
            let notifications = try await observer.notifications(matching: ["c.a", "c.b", "c.*"])
            #expect(try await poster.status().subscriptions == 3)
            let consumer = Task {
                for await _ in notifications {}
            }
            consumer.cancel()
            await consumer.value
            let withdrawn = try await eventually(timeout: .seconds(10)) {
                (try? await poster.status().subscriptions) == 0
            }
            #expect(withdrawn, "the daemon still holds the stream's subscriptions")
            #expect(observer.disconnectReason == nil)
        }
    }

    @Test func aReconnectedStreamFollowsEveryPatternAgain() async throws {
        let directory = TemporaryDirectory()
        let first = try await TestDaemon.start(directory: directory)
        let herald = try await connect(first)
        let notifications = try await herald.notifications(matching: ["r.one", "r.two"])
        try await first.stop(signal: SIGKILL)
        let second = try await TestDaemon.start(directory: directory)
        let poster = try await connect(second)
        // Once both are live again, posts to each come in order; the notice comes first.
        let live = try await eventually(timeout: .seconds(20)) {
            (try? await poster.status().subscriptions) == 2
        }
        try #require(live, "the reconnected stream did not subscribe both patterns again")
        try await poster.post("r.two")
        try await poster.post("r.one")
        let received = await collect(3, from: notifications, timeout: .seconds(10))
        #expect(received.map(\.name) == [HeraldNotification.reconnectedNoticeName, "r.two", "r.one"])
        _ = try await second.stop()
    }
}
