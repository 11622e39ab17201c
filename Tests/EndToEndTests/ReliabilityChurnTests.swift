import Foundation
import Herald
import HeraldLaunch
import HeraldPosix
import HeraldTestSupport
import HeraldWire
import Testing

/// Issue 3, point 5: churn, the descriptor limit, and clients killed mid-frame.
struct ReliabilityChurnTests {
    /// Waits until the daemon reports `count` connections (the asking one included).
    private func connections(_ count: UInt32, on daemon: TestDaemon) async throws {
        let path = daemon.socketPath
        let probe = try await blocking { try WireClient.ready(socketPath: path) }
        let deadline = ContinuousClock.now + .seconds(20)
        var request: UInt32 = 1
        while true {
            let asked = request
            let answer = try await blocking { () -> Frame? in
                try probe.send(.status(.init(request: asked)))
                return try probe.receive()
            }
            guard case .statusReport(let report)? = answer else { throw TestFailure("no STATUS_REPORT") }
            if report.connections == count { return }
            guard ContinuousClock.now < deadline else {
                throw TestFailure("the daemon still reports \(report.connections) connections, expected \(count)")
            }
            request += 1
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    @Test func tenThousandConnectSubscribeDisconnectCyclesLeakNothing() async throws {
        let daemon = try await TestDaemon.start(arguments: ["--log-level", "notice"])
        // Warm up the allocator and the tables, then take the baseline.
        let path = daemon.socketPath
        try await blocking {
            for round in 0..<1000 {
                try WireClient.ready(socketPath: path).subscribe(1, "churn.\(round % 50).*")
            }
        }
        try await connections(1, on: daemon)
        // The probe's own close may still be in flight: take the lowest count seen as it settles.
        _ = try await settles(within: .seconds(2)) { try DaemonProbe.descriptorCount(of: daemon.pid) <= 6 }
        let descriptors = try DaemonProbe.descriptorCount(of: daemon.pid)
        let memory = try DaemonProbe.residentBytes(of: daemon.pid)
        try await blocking {
            for round in 0..<10_000 {
                let client = try WireClient.ready(socketPath: path)
                try client.subscribe(1, "churn.\(round % 50).*")
                try client.subscribe(2, "churn.exact.\(round)")
            }
        }
        try await connections(1, on: daemon)
        // The probe that asked closes too; wait for the count to come back rather than race it.
        let settled = try await settles(within: .seconds(20)) {
            try DaemonProbe.descriptorCount(of: daemon.pid) <= descriptors
        }
        let now = try DaemonProbe.descriptorCount(of: daemon.pid)
        #expect(settled, "the daemon holds \(now) descriptors, \(descriptors) before")
        let growth = try DaemonProbe.residentBytes(of: daemon.pid) - memory
        #expect(growth < 2 << 20, "the daemon grew by \(growth) bytes over 10,000 cycles")
        // And it still works.
        let client = try WireClient.ready(socketPath: daemon.socketPath)
        try client.subscribe(1, "still.*")
        try client.post("still.here")
    }

    /// Whether `condition` comes to hold within `timeout`, checked every 20 ms.
    private func settles(within timeout: Duration, _ condition: () throws -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if try condition() { return true }
            try await Task.sleep(for: .milliseconds(20))
        }
        return try condition()
    }

    @Test func runningOutOfDescriptorsPausesAcceptingInsteadOfSpinning() async throws {
        let directory = TemporaryDirectory()
        let socket = directory.file("socket")
        let daemon = try ChildProcess(
            "/usr/bin/prlimit",
            ["--nofile=24:24", TestBinaries.path("heraldd"), "--socket", socket, "--log-level", "info"]
        )
        try await daemon.waitForStderrLine(containing: "ready on")
        // Connecting succeeds through the listen backlog even while the daemon cannot accept.
        var clients = try (0..<40).map { _ in try WireClient(socketPath: socket, receiveTimeout: 2) }
        try await daemon.waitForStderrLine(containing: "pausing accepts")
        let cpuBefore = try DaemonProbe.cpuSeconds(of: daemon.pid)
        let clock = ContinuousClock()
        let start = clock.now
        // A few more pauses: the daemon retries every 100 ms.
        try await daemon.wait(for: "three more pauses") { _, err in
            err.filter { $0.contains("pausing accepts") }.count >= 4
        }
        let elapsed = clock.now - start
        let cpu = try DaemonProbe.cpuSeconds(of: daemon.pid) - cpuBefore
        let wall = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        #expect(cpu < max(0.05, wall * 0.5), "heraldd used \(cpu) s of CPU in \(wall) s while out of descriptors")
        // Freeing descriptors lets it accept again; it never died.
        clients.removeAll()
        // Up to 20 s of blocking reads: off the cooperative pool.
        let welcomed = try await blocking { () throws -> Bool in
            let deadline = ContinuousClock.now + .seconds(20)
            while ContinuousClock.now < deadline {
                let client = try WireClient(socketPath: socket, receiveTimeout: 5)
                try client.send(.hello(.init(client: "after")))
                if case .welcome? = try? client.receive() { return true }
            }
            return false
        }
        #expect(welcomed)
        #expect(daemon.exitStatus == nil)
        daemon.signal(SIGTERM)
        #expect(try await daemon.waitForExit() == 0)
    }

    @Test func clientsKilledMidFrameAreCleanedUp() async throws {
        let daemon = try await TestDaemon.start()
        // Half a frame, then gone.
        for length in [1, 3, 5, 9] {
            let client = try WireClient.ready(socketPath: daemon.socketPath)
            let frame = Frame.post(.init(name: "half.frame", payload: [1, 2, 3, 4])).encoded()
            try client.sendBytes(Array(frame.prefix(length)))
        }
        // A real process killed while subscribed.
        let killed = try ChildProcess(
            TestBinaries.path("herald"),
            ["observe", "**", "--ready"],
            environment: daemon.environment
        )
        try await killed.waitForStderrLine(containing: "ready")
        killed.signal(SIGKILL)
        _ = try await killed.waitForExit()
        try await connections(1, on: daemon)
        let status = try await run("herald", ["status", "--json"], environment: daemon.environment)
        #expect(status.stdout.contains(#""subscriptions":0"#), "status: \(status.stdout)")
    }
}
