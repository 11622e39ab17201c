import Foundation
import HeraldTestSupport
import Testing

/// `herald post`, `herald get` and `herald status` against a real heraldd.
@Suite struct HeraldCLIPostTests {
    @Test(arguments: [
        (["url=http://x/?a=b", "empty="], #"{"empty":"","url":"http://x/?a=b"}"#),
        (
            ["--json", #"{"n":1,"ok":true,"list":[1,"a",null],"nested":{"k":2.5}}"#],
            #"{"list":[1,"a",null],"n":1,"nested":{"k":2.5},"ok":true}"#
        ),
        ([], "{}"),
    ])
    func postSendsPairsOrJSONAsTheObjectPayload(arguments: [String], expected: String) async throws {
        let daemon = try await TestDaemon.start()
        let observer = try await CLI.startSubscribed(
            ["observe", "--json", "--count", "1", "data.item"],
            daemon: daemon
        )

        try await CLI.post(["data.item"] + arguments, daemon: daemon)

        #expect(try await observer.waitForExit() == 0)
        let line = try CLI.object(try #require(observer.stdoutLines.first))
        #expect(try CLI.payloadText(line) == expected)
    }

    @Test func getPrintsTheRetainedValueUntilItIsCleared() async throws {
        let daemon = try await TestDaemon.start()
        try await CLI.post(["session.state", "state=away", "--retain"], daemon: daemon)

        let raw = try await CLI.run(["get", "session.state"], daemon: daemon)
        #expect(raw.status == 0)
        #expect(raw.stdout == "{\"state\":\"away\"}\n")
        #expect(raw.stderr.isEmpty)

        let json = try await CLI.run(["get", "--json", "session.state"], daemon: daemon)
        #expect(json.status == 0)
        let line = try CLI.object(json.stdout)
        #expect(line["name"] as? String == "session.state")
        #expect(line["retained"] as? Bool == true)
        #expect(try CLI.payloadText(line) == #"{"state":"away"}"#)

        // --retain with neither pairs nor --json clears the value.
        try await CLI.post(["session.state", "--retain"], daemon: daemon)
        let cleared = try await CLI.run(["get", "session.state"], daemon: daemon)
        #expect(cleared.status == 1)
        #expect(cleared.stdout.isEmpty)
        #expect(cleared.stderr.isEmpty)
    }

    @Test func getExitsOneForANameNeverRetained() async throws {
        let daemon = try await TestDaemon.start()
        try await CLI.post(["live.only", "k=v"], daemon: daemon)
        let result = try await CLI.run(["get", "live.only"], daemon: daemon)
        #expect(result.status == 1)
        #expect(result.stdout.isEmpty)
    }

    @Test func statusJSONReportsTheDaemonsCounters() async throws {
        let daemon = try await TestDaemon.start()
        try await CLI.post(["session.state", "state=away", "--retain"], daemon: daemon)
        try await CLI.post(["session.lock"], daemon: daemon)

        let result = try await CLI.run(["status", "--json"], daemon: daemon)
        #expect(result.status == 0)
        #expect(result.stdoutLines.count == 1)
        let status = try CLI.object(result.stdout)
        #expect(status["pid"] as? Int == Int(daemon.pid))
        #expect(status["socket"] as? String == daemon.socketPath)
        #expect(CLI.isISOTime(status["startTime"] as? String ?? ""))
        #expect((status["uptimeSeconds"] as? Double ?? -1) >= 0)
        #expect(status["connections"] as? Int == 1)
        #expect(status["subscriptions"] as? Int == 0)
        #expect(status["retained"] as? Int == 1)
        #expect(status["posted"] as? Int == 2)
        #expect(status["delivered"] as? Int == 0)
        #expect(status["dropped"] as? Int == 0)
    }

    @Test func statusPrintsAlignedLines() async throws {
        let daemon = try await TestDaemon.start()
        let result = try await CLI.run(["status"], daemon: daemon)
        #expect(result.status == 0)
        let keys = result.stdoutLines.map { String($0.prefix { $0 != ":" }) }
        #expect(
            keys == [
                "socket", "pid", "started", "uptime", "connections", "subscriptions", "retained", "posted",
                "delivered", "dropped",
            ]
        )
        // Every value starts in the same column, one space after the longest key.
        let valueColumns = result.stdoutLines.map { line in
            line.count - line.drop { $0 != " " }.drop { $0 == " " }.count
        }
        #expect(Set(valueColumns) == ["subscriptions: ".count])
        #expect(result.stdoutLines.contains("pid:           \(daemon.pid)"))
    }
}
