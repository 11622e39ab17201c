import Foundation
import Herald
import HeraldTestSupport
import Testing

/// Retained values: replayed first on a subscription, read with GET, cleared with an empty retained post.
@Suite struct RetainedValueTests {
    @Test func deliversRetainedValuesBeforeLivePosts() async throws {
        try await withDaemon { daemon in
            let poster = try await connect(daemon)
            try await poster.post("session.state", userInfo: ["state": "away"], retain: true)
            try await poster.post("session.mood", userInfo: ["mood": "fine"], retain: true)
            try await poster.post("session.mood", userInfo: ["mood": "great"], retain: true)
            // Not retained: a subscription started later must not see it.
            try await poster.post("session.blip")
            try await poster.flush()

            let observer = try await connect(daemon)
            let notifications = try await observer.notifications(matching: "session.*")
            try await poster.post("session.state", userInfo: ["state": "active"])

            let received = await collect(3, from: notifications)
            try #require(received.count == 3)
            let retained = received.prefix(2).sorted { $0.name < $1.name }
            #expect(retained.map(\.name) == ["session.mood", "session.state"])
            #expect(retained.map(\.isRetained) == [true, true])
            #expect(retained.map { $0.userInfo } == [["mood": "great"], ["state": "away"]])
            // The retained values carry the sequence numbers of the posts that stored them.
            #expect(retained.map(\.sequence) == [3, 1])
            #expect(received[2].isRetained == false)
            #expect(received[2].userInfo == ["state": "active"])
            #expect(received[2].sequence == 5)
        }
    }

    @Test func readsAndClearsARetainedValue() async throws {
        try await withDaemon { daemon in
            let herald = try await connect(daemon)
            #expect(try await herald.retainedValue(of: "session.state") == nil)

            try await herald.post("session.state", userInfo: ["state": "away"], retain: true)
            // Same connection: the daemon processes the POST before the GET, no flush needed.
            let value = try #require(try await herald.retainedValue(of: "session.state"))
            #expect(value.name == "session.state")
            #expect(value.userInfo == ["state": "away"])
            #expect(value.isRetained)
            #expect(value.sequence == 1)
            #expect(value.sender.pid == getpid())

            // Another connection sees it too.
            let other = try await connect(daemon)
            #expect(try await other.retainedValue(of: "session.state")?.userInfo == ["state": "away"])

            try await herald.post("session.state", payload: [], retain: true)
            #expect(try await herald.retainedValue(of: "session.state") == nil)
            #expect(try await other.retainedValue(of: "session.state") == nil)
            #expect(try await herald.status().retained == 0)
        }
    }

    @Test func aRetainedPostIsAlsoDeliveredLive() async throws {
        try await withDaemon { daemon in
            let herald = try await connect(daemon)
            let notifications = try await herald.notifications(matching: "session.state")
            try await herald.post("session.state", userInfo: ["state": "away"], retain: true)
            let received = await collect(1, from: notifications)
            #expect(received.map(\.isRetained) == [false])
        }
    }
}
