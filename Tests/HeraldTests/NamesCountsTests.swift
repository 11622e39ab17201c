import Herald
import HeraldTestSupport
import Testing

/// `names(withSubscriberCounts:)` against the real heraldd: each name with the subscriptions matching it.
@Suite struct NamesCountsTests {
    @Test func eachNameComesWithTheSubscriptionsMatchingItMonitorsLeftOut() async throws {
        try await withDaemon { daemon in
            let asker = try await connect(daemon)
            let subscriber = try await connect(daemon)
            let monitor = try await connect(daemon)
            try await asker.post("sensor.temp", retain: true)
            try await asker.post("sensor.room.temp", retain: true)
            try await asker.flush()
            // Held until the end: dropping a sequence unsubscribes.
            let exact = try await subscriber.notifications(matching: "session.state")
            let star = try await subscriber.notifications(matching: "sensor.*")
            let everything = try await asker.notifications(matching: "**")
            let watching = try await monitor.monitor()

            let counted = try await asker.names(withSubscriberCounts: true)
            #expect(
                counted == [
                    HeraldName(name: "sensor.room.temp", subscribers: 1),  // **
                    HeraldName(name: "sensor.temp", subscribers: 2),  // sensor.*, **
                    HeraldName(name: "session.state", subscribers: 2),  // session.state, **
                ]
            )
            #expect(counted.map(\.name) == (try await asker.names()))
            #expect(
                try await asker.names(withSubscriberCounts: false).map(\.subscribers) == [nil, nil, nil],
                "not asked, not counted"
            )
            withExtendedLifetime((exact, star, everything, watching)) {}
        }
    }

    @Test func aVersion1DaemonListsTheNamesWithNilCounts() async throws {
        try await withDaemon(["--max-protocol-version", "1"]) { daemon in
            let asker = try await connect(daemon)
            let subscription = try await asker.notifications(matching: "session.state")
            #expect(asker.protocolVersion == 1)
            #expect(
                try await asker.names(withSubscriberCounts: true) == [
                    HeraldName(name: "session.state", subscribers: nil)
                ]
            )
            // The connection is still usable: nothing was refused.
            #expect(try await asker.names() == ["session.state"])
            withExtendedLifetime(subscription) {}
        }
    }
}
