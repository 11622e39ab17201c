import Foundation
import HeraldTestSupport
import Testing

/// `herald-bench` runs a tiny workload against a real heraldd and reports it in the harness's JSON shape. It checks
/// that the tool works and accounts exactly, not how fast anything is: speed is measured by Benchmarks/compare.sh.
@Suite struct BenchSmokeTests {
    /// With the consumers on each Herald's reader thread (the default) and in plain Tasks on the global pool.
    @Test(arguments: ["reader", "pool"])
    func fanOutRunDeliversEveryMessageToEverySubscriberAndSaysOK(consumers: String) async throws {
        let daemon = try await TestDaemon.start()
        let result = try await run(
            "herald-bench",
            [
                "--workload", "fanout-10", "--socket", daemon.socketPath, "--messages", "300", "--duration", "5",
                "--consumers", consumers,
            ],
            timeout: .seconds(60)
        )

        #expect(result.status == 0, "stderr: \(result.stderr)")
        let lines = result.stdoutLines
        #expect(lines.count == 1)
        let line = try #require(lines.first)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(object["peer"] as? String == "herald-bench")
        #expect(object["workload"] as? String == "fanout-10")
        #expect(object["messages_sent"] as? Int == 300)
        #expect(object["expected"] as? Int == 3000)
        #expect(object["delivered"] as? Int == 3000)
        #expect(object["lost"] as? Int == 0)
        #expect(object["misrouted"] as? Int == 0)
        #expect(object["ok"] as? Bool == true)
        #expect(((object["delivery_rate"] as? NSNumber)?.doubleValue ?? 0) > 0)
        #expect(((object["broker_cpu_pct"] as? NSNumber)?.doubleValue ?? -1) >= 0)
    }

    /// `--window-wait block`: publishers whose window is full sleep until the consumers wake them. Many windows fill
    /// (20,000 messages against a window of 500 deliveries), and every message arrives; a wait that no delivery
    /// ends ends the run as stalled, not ok.
    @Test(arguments: [("fanout-1", 1, 20_000), ("named", 3, 6_000)])
    func blockedPublishersAreWokenAndDeliverEveryMessage(
        workload: String,
        publishers: Int,
        messages: Int
    )
        async throws
    {
        let daemon = try await TestDaemon.start()
        let result = try await run(
            "herald-bench",
            [
                "--workload", workload, "--socket", daemon.socketPath, "--messages", String(messages),
                "--duration", "60", "--publishers", String(publishers), "--window-wait", "block",
            ],
            timeout: .seconds(120)
        )
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let line = try #require(result.stdoutLines.first)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(object["messages_sent"] as? Int == messages)
        #expect(object["delivered"] as? Int == object["expected"] as? Int)
        #expect(object["lost"] as? Int == 0)
        #expect(object["ok"] as? Bool == true, "\(line)")
    }

    /// Several posting tasks on one connection, and one connection each: every message of every publisher arrives,
    /// exactly once, and the line says how the publishers were spread.
    @Test(arguments: [(1, "connection"), (3, "connection"), (3, "name")])
    func severalPublishersDeliverEveryMessageOfEach(connections: Int, streams: String) async throws {
        let daemon = try await TestDaemon.start()
        let result = try await run(
            "herald-bench",
            [
                "--workload", "named", "--socket", daemon.socketPath, "--messages", "3000", "--duration", "5",
                "--publishers", "3", "--publisher-connections", String(connections), "--streams", streams,
            ],
            timeout: .seconds(60)
        )

        #expect(result.status == 0, "stderr: \(result.stderr)")
        let line = try #require(result.stdoutLines.first)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(object["publishers"] as? Int == 3)
        #expect(object["publisher_connections"] as? Int == connections)
        // One stream per connection following its 10 names, or one per name.
        #expect(object["streams_per_sub"] as? Int == (streams == "name" ? 10 : 1))
        #expect(object["messages_sent"] as? Int == 3000)
        // named: 1000 names, each subscribed by one of the 100 connections' 10.
        #expect(object["expected"] as? Int == 3000)
        #expect(object["delivered"] as? Int == 3000)
        #expect(object["lost"] as? Int == 0)
        #expect(object["extra"] as? Int == 0)
        #expect(object["misrouted"] as? Int == 0)
        #expect(object["ok"] as? Bool == true)
    }

    /// With `--subscriber-socket`, the subscribers are another daemon's clients: two daemons with no bridge between
    /// them deliver nothing, where one daemon would have delivered all 100.
    @Test func subscriberSocketPutsTheSubscribersOnTheOtherDaemon() async throws {
        let publishers = try await TestDaemon.start()
        let subscribers = try await TestDaemon.start()
        let result = try await run(
            "herald-bench",
            [
                "--workload", "fanout-1", "--socket", publishers.socketPath, "--subscriber-socket",
                subscribers.socketPath, "--messages", "100", "--duration", "5", "--drain-ms", "300",
            ],
            timeout: .seconds(60)
        )

        #expect(result.status == 1, "stderr: \(result.stderr)")
        let line = try #require(result.stdoutLines.first)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(object["messages_sent"] as? Int == 100)
        #expect(object["delivered"] as? Int == 0)
        #expect(object["lost"] as? Int == 100)
        #expect(object["ok"] as? Bool == false)
    }

    @Test func missingModeIsAUsageError() async throws {
        let result = try await run("herald-bench", [])

        #expect(result.status == 64)
        #expect(result.stderr.contains("Error: Missing '--workload <name>', '--all' or '--micro <group>'"))
    }
}
