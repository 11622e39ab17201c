import Foundation
import Herald
import HeraldTestSupport
import Testing

/// Errors found before anything is sent leave the connection working; a missing daemon says where it looked.
@Suite struct HeraldErrorTests {
    @Test(arguments: [
        "", ".a", "a.", "a..b", "a b", "a.*", "tab\there", "c1.\u{85}", String(repeating: "n", count: 256),
    ])
    func invalidNamesThrowWithoutTouchingTheConnection(name: String) async throws {
        try await withDaemon { daemon in
            let herald = try await connect(daemon)
            #expect(await heraldError { try await herald.post(name) }?.code == .invalidName)
            #expect(
                await heraldError { _ = try await herald.postAcknowledged(name, payload: []) }?.code == .invalidName
            )
            #expect(await heraldError { _ = try await herald.retainedValue(of: name) }?.code == .invalidName)
            try await expectStillWorks(herald)
        }
    }

    @Test(arguments: ["", "a.**.b", "a*", "**.a", "a..b", "a b", "*a.b"])
    func invalidPatternsThrowWithoutTouchingTheConnection(pattern: String) async throws {
        try await withDaemon { daemon in
            let herald = try await connect(daemon)
            let error = await heraldError { _ = try await herald.notifications(matching: pattern) }
            #expect(error?.code == .invalidPattern)
            #expect(error?.message.contains("invalid pattern") == true)
            try await expectStillWorks(herald)
        }
    }

    @Test(arguments: ["herald", "herald.dropped", "herald.anything.else"])
    func reservedNamesCannotBePosted(name: String) async throws {
        try await withDaemon { daemon in
            let herald = try await connect(daemon)
            let error = await heraldError { try await herald.post(name) }
            #expect(error?.code == .reservedName)
            #expect(error?.message.contains(name) == true)
            // Observing them is fine: that is where the library's notices appear.
            _ = try await herald.notifications(matching: "herald.*")
            try await expectStillWorks(herald)
        }
    }

    @Test func oversizedPayloadsAreRefusedLocally() async throws {
        try await withDaemon(["--max-payload", "1000"]) { daemon in
            let herald = try await connect(daemon)
            #expect(herald.maxPayload == 1000)
            let error = await heraldError {
                try await herald.post("big", payload: [UInt8](repeating: 0x61, count: 1001))
            }
            #expect(error?.code == .payloadTooLarge)
            #expect(error?.message.contains("1000") == true)
            // Exactly the limit is fine.
            #expect(try await herald.postAcknowledged("big", payload: [UInt8](repeating: 0x61, count: 1000)) == 1)
            try await expectStillWorks(herald)
        }
    }

    @Test func subscriptionsPastTheLimitAreRefusedLocally() async throws {
        try await withDaemon(["--max-subscriptions", "2"]) { daemon in
            let herald = try await connect(daemon)
            #expect(herald.maxSubscriptions == 2)
            let first = try await herald.notifications(matching: "limit.a")
            do {
                let second = try await herald.notifications(matching: "limit.b")
                let error = await heraldError { _ = try await herald.notifications(matching: "limit.c") }
                #expect(error?.code == .tooManySubscriptions)
                withExtendedLifetime(second) {}
            }
            // Dropping one makes room again, and the connection never saw TOO_MANY_SUBSCRIPTIONS.
            let third = try await herald.notifications(matching: "limit.c")
            try await herald.post("limit.c")
            #expect(await collect(1, from: third).map(\.name) == ["limit.c"])
            #expect(herald.disconnectReason == nil)
            withExtendedLifetime(first) {}
        }
    }

    @Test func aMissingDaemonIsUnavailableAndTheMessageNamesThePath() async throws {
        let directory = TemporaryDirectory()
        let path = directory.file("no-daemon")
        let error = await heraldError { _ = try await Herald.connect(socketPath: path) }
        #expect(error?.code == .daemonUnavailable)
        #expect(error?.message.contains(path) == true)
        #expect(error?.message.contains("errno") == true)
        #expect(error?.message.contains("heraldd") == true)
    }

    @Test func theSocketPathFollowsTheEnvironment() async throws {
        try await withDaemon { daemon in
            // Only through HERALD_SOCKET: no explicit path. In a process of its own (`herald status` connects with
            // the library's default path): setting this process's environment would race with the other tests
            // starting processes, which read it at the same time (it crashed a run inside Process.run).
            let status = try await run("herald", ["status", "--json"], environment: daemon.environment)
            #expect(status.status == 0, "\(status.stderr)")
            #expect(status.stdout.contains("\"pid\":\(daemon.pid)"), "\(status.stdout)")
        }
    }

    /// Posts and observes on `herald`, to show that an earlier refused call left it usable.
    private func expectStillWorks(_ herald: Herald) async throws {
        let notifications = try await herald.notifications(matching: "still.works")
        try await herald.post("still.works")
        #expect(await collect(1, from: notifications).map(\.name) == ["still.works"])
        #expect(herald.disconnectReason == nil)
    }
}
