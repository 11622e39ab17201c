import Foundation
import Herald
import Testing

@testable import HeraldDashboard

@Suite struct DashboardModelTests {
    private func post(
        _ model: inout DashboardModel,
        _ name: String,
        _ text: String = "{}",
        retain: Bool = false,
        sequence: UInt64 = 1,
        second: Int64 = 1_000
    ) {
        model.postSeen(
            name,
            payload: Array(text.utf8),
            timeNanoseconds: UInt64(second) * 1_000_000_000,
            sequence: sequence,
            setsRetained: retain,
            second: second
        )
    }

    private func object(_ json: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
    }

    @Test func anUpdateCarriesEachChangeOnceAndNothingWhenNothingChanged() throws {
        var model = DashboardModel(recentPosts: 10)
        post(&model, "a.b", "{\"x\":1}", retain: true)
        post(&model, "a.c")
        var last: UInt64 = 0
        let update = try object(try #require(model.takeUpdate(lastPost: &last, second: 1_001)))
        let names = try #require(update["names"] as? [[String: Any]])
        #expect(names.map { $0["name"] as? String } == ["a.b", "a.c"])
        #expect(names[0]["value"] as? String == "{\n  \"x\": 1\n}")
        #expect(names[0]["rate"] as? Int == 1, "a.b posted once in second 1000")
        #expect((update["posts"] as? [[String: Any]])?.count == 2)
        #expect(last == 2)
        #expect(model.takeUpdate(lastPost: &last, second: 1_001) == nil)
    }

    @Test func anUpdateUnderAFloodSendsOnlyTheNewestPostsAndABoundedNumberOfNames() throws {
        var model = DashboardModel(recentPosts: 100)
        for number in 0..<1_000 { post(&model, "flood.\(number % 400)") }
        var last: UInt64 = 0
        let update = try object(
            try #require(model.takeUpdate(lastPost: &last, second: 1_001, postLimit: 5, nameLimit: 256))
        )
        #expect(
            (update["posts"] as? [[String: Any]])?.compactMap { $0["index"] as? Int } == [996, 997, 998, 999, 1_000]
        )
        #expect((update["names"] as? [Any])?.count == 256)
        let next = try object(try #require(model.takeUpdate(lastPost: &last, second: 1_001, nameLimit: 256)))
        #expect((next["names"] as? [Any])?.count == 144, "the other names follow")
        #expect((next["posts"] as? [Any])?.isEmpty == true)
    }

    @Test func theTickSendsEachActiveNamesRateAndOnceMoreWhenItFallsToZero() throws {
        var model = DashboardModel()
        post(&model, "a", second: 10)
        post(&model, "a", second: 10)
        post(&model, "b", second: 11)
        let ten = try object(model.tickFields(second: 10) + "}")
        #expect(ten["total"] as? Int == 2)
        #expect(ten["rates"] as? [String: Int] == ["a": 2])
        let eleven = try object(model.tickFields(second: 11) + "}")
        #expect(eleven["rates"] as? [String: Int] == ["a": 0, "b": 1])
        let twelve = try object(model.tickFields(second: 12) + "}")
        #expect(twelve["rates"] as? [String: Int] == ["b": 0])
        #expect(twelve["total"] as? Int == 0)
    }

    @Test func theSeriesHoldsFiveMinutesForAllPostsAndTheSelectedName() throws {
        var model = DashboardModel()
        post(&model, "a", second: 500)
        post(&model, "b", second: 500)
        post(&model, "a", second: 599)
        let series = try object(model.seriesJSON(endingAt: 599, selected: "a"))
        let total = try #require(series["total"] as? [Int])
        let named = try #require(series["named"] as? [Int])
        #expect(total.count == 300 && named.count == 300)
        #expect(total[299] == 1 && total[200] == 2)
        #expect(named[299] == 1 && named[200] == 1)
        #expect(try object(model.seriesJSON(endingAt: 599, selected: nil))["named"] is NSNull)
    }

    @Test func pluginsAndBridgesComeFromTheirRetainedStates() {
        var model = DashboardModel()
        post(
            &model,
            "herald.plugin.bt",
            "{\"state\":\"running\",\"restarts\":2,\"lastExit\":\"exit 1\",\"pid\":42}",
            retain: true
        )
        post(&model, "herald.plugin.gone", "", retain: true)
        post(&model, "bridge.mqtt.host1", "{\"connected\":true}", retain: true)
        post(&model, "bridge.dbus", "{\"session\":\"connected\"}", retain: true)
        #expect(model.plugins == [.init(name: "bt", state: "running", restarts: 2, lastExit: "exit 1", pid: 42)])
        #expect(model.bridges.map(\.name) == ["bridge.dbus", "bridge.mqtt.host1"])
    }

    @Test func noticesAreBounded() {
        var model = DashboardModel()
        for number in 0..<25 { model.noticeAdded("n\(number)") }
        #expect(model.notices.count == DashboardModel.maximumNotices)
        #expect(model.notices.last == "n24")
    }

    @Test func theMemoryOfAFloodOfNewNamesAndLargePostsIsBounded() {
        var model = DashboardModel(recentPosts: 50, maximumNames: 100)
        let payload = String(repeating: "p", count: 60_000)
        for number in 0..<5_000 { post(&model, "n.\(number)", payload, retain: true, second: Int64(number / 100)) }
        #expect(model.names.count == 100)
        #expect(model.posts.count == 50)
        #expect(model.posts.all.allSatisfy { $0.payload.count <= PostRing.maximumPayloadBytes })
        #expect(model.names.untrackedPosts == 4_900)
        #expect(model.activeSeconds.count <= 2)
    }

    @Test func anUpdateCarriesEachNamesSubscriberCountOrNull() throws {
        var model = DashboardModel(recentPosts: 10)
        post(&model, "a.b", retain: true)
        post(&model, "a.c")
        model.subscriberCountsRead([HeraldName(name: "a.b", subscribers: 3)])
        var last: UInt64 = 0
        let update = try object(try #require(model.takeUpdate(lastPost: &last, second: 1_001)))
        let names = try #require(update["names"] as? [[String: Any]])
        #expect(names.map { $0["name"] as? String } == ["a.b", "a.c"])
        #expect(names[0]["subscribers"] as? Int == 3)
        #expect(names[1]["subscribers"] is NSNull, "a.c was not listed: its count is unknown")
        model.subscriberCountsRead([HeraldName(name: "a.b", subscribers: 4)])
        let next = try object(try #require(model.takeUpdate(lastPost: &last, second: 1_001)))
        #expect((next["names"] as? [[String: Any]])?.map { $0["subscribers"] as? Int } == [4], "only the change")
    }
}
