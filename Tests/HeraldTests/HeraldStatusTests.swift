import Foundation
import Herald
import HeraldTestSupport
import Testing

/// STATUS reports the daemon's counters as they are.
@Suite struct HeraldStatusTests {
    @Test func countsConnectionsSubscriptionsRetainedAndPosts() async throws {
        try await withDaemon { daemon in
            let observer = try await connect(daemon)
            let poster = try await connect(daemon)

            let initial = try await observer.status()
            #expect(initial.pid == daemon.pid)
            #expect(initial.connections == 2)
            #expect(initial.subscriptions == 0)
            #expect(initial.retained == 0)
            #expect(initial.posted == 0)
            #expect(initial.delivered == 0)
            #expect(initial.dropped == 0)
            let startedAgo = Date().timeIntervalSince(initial.startTime)
            #expect(startedAgo >= 0 && startedAgo < 120)
            #expect(initial.uptime > .zero && initial.uptime < .seconds(120))

            let notifications = try await observer.notifications(matching: "count.*")
            // Kept until the end: dropping a sequence unsubscribes.
            let other = try await observer.notifications(matching: "other")
            try await poster.post("count.a", retain: true)
            try await poster.post("count.b", retain: true)
            try await poster.post("count.c")
            try await poster.post("unwatched")
            try await poster.flush()
            #expect(await collect(3, from: notifications).count == 3)

            let later = try await poster.status()
            #expect(later.connections == 2)
            #expect(later.subscriptions == 2)
            #expect(later.retained == 2)
            #expect(later.posted == 4)
            #expect(later.delivered == 3)
            #expect(later.dropped == 0)
            withExtendedLifetime(other) {}
        }
    }
}
