import Foundation
import Herald
import Testing

@testable import HeraldDashboard

@Suite struct PageRendererTests {
    private func model() -> DashboardModel {
        var model = DashboardModel(recentPosts: 3)
        model.postSeen(
            "room.lamp",
            payload: Array("{\"on\":true}".utf8),
            timeNanoseconds: 1_000_000_000_000,
            sequence: 1,
            setsRetained: true,
            second: 1_000
        )
        model.postSeen(
            "x.<script>",
            payload: Array("{\"a\":\"</pre><b>\"}".utf8),
            timeNanoseconds: 0,
            sequence: 2,
            setsRetained: true,
            second: 1_000
        )
        model.postSeen(
            "herald.plugin.bt",
            payload: Array("{\"state\":\"running\",\"restarts\":0}".utf8),
            timeNanoseconds: 0,
            sequence: 3,
            setsRetained: true,
            second: 1_000
        )
        return model
    }

    @Test func theFirstViewHoldsTheTreeTheValuesAndThePluginsWithoutScript() {
        let html = PageRenderer.render(model(), token: "tok", second: 1_001, selected: "room.lamp")
        #expect(html.contains("<tr data-name=\"room.lamp\">"))
        #expect(html.contains("{\n  &quot;on&quot;: true\n}"), "the retained value, pretty-printed")
        #expect(html.contains("<td class=\"num\">1</td>"), "room.lamp's rate in second 1000")
        #expect(html.contains("aria-label=\"stop bt\""))
        #expect(html.contains("<form method=\"post\" action=\"/plugin?token=tok\""))
        #expect(html.contains("<form class=\"post\" method=\"post\" action=\"/post?token=tok\""))
        #expect(html.contains("<polyline id=\"plot-total\""))
    }

    @Test func theTreeHasARowForEachInnerNodeThatIsNotANameItself() {
        var model = model()
        model.postSeen("room", payload: [UInt8](), timeNanoseconds: 0, sequence: 9, setsRetained: false, second: 1_000)
        let html = PageRenderer.render(model, token: "tok", second: 1_001, selected: nil)
        #expect(html.contains("data-group=\"herald\""))
        #expect(html.contains("data-group=\"herald.plugin\""))
        #expect(!html.contains("data-group=\"room\""), "room is a name: its own row is the node")
        let order = [
            "data-group=\"herald\"", "data-group=\"herald.plugin\"", "data-name=\"herald.plugin.bt\"",
            "data-name=\"room\"", "data-name=\"room.lamp\"",
        ].map { html.range(of: $0)!.lowerBound }
        #expect(order == order.sorted(), "parents come right before their children")
    }

    @Test func everythingFromTheSessionIsEscaped() {
        let html = PageRenderer.render(model(), token: "tok", second: 1_001, selected: nil)
        #expect(!html.contains("x.<script>"))
        #expect(html.contains("x.&lt;script&gt;"))
        #expect(!html.contains("</pre><b>"))
    }

    @Test func itIsAccessibleCaptionsHeaderScopesAndLabels() {
        let html = PageRenderer.render(model(), token: "tok", second: 1_001, selected: nil)
        #expect(html.components(separatedBy: "<caption>").count - 1 == 5, "every table has a caption")
        #expect(html.contains("<th scope=\"col\">Name</th>"))
        #expect(html.contains("<th scope=\"row\" class=\"tree\""))
        #expect(html.contains("aria-label=\"room.lamp\""), "a screen reader hears the whole name")
        for field in ["post-name", "post-payload"] {
            #expect(html.contains("<label for=\"\(field)\">") && html.contains("id=\"\(field)\""))
        }
        #expect(html.contains("role=\"img\" aria-labelledby=\"plot-title\""))
        #expect(html.contains("<html lang=\"en\">"))
    }

    @Test func nothingIsLoadedFromElsewhere() {
        let html = PageRenderer.render(model(), token: "tok", second: 1_001, selected: nil)
        #expect(!html.contains("src=\"http"))
        #expect(!html.contains("href=\"http"))
        #expect(!html.contains("<link"))
    }

    @Test func jsonIsEscapedForScriptsAndPrettyPrintedWithSortedKeys() {
        #expect(Markup.json("a\"b\\c\n</script>") == "\"a\\\"b\\\\c\\n\\u003c/script>\"")
        #expect(
            Markup.prettyJSON(Array("{\"b\":1,\"a\":[true,null]}".utf8))
                == "{\n  \"a\": [\n    true,\n    null\n  ],\n  \"b\": 1\n}"
        )
        #expect(Markup.prettyJSON(Array("not json".utf8)) == "not json")
        #expect(Markup.time(nanoseconds: 1_795_840_284_123_000_000) == "2026-11-28T04:31:24.123Z")
    }

    @Test func theFirstViewShowsEachNamesSubscriberCountInItsOwnColumn() {
        var model = model()
        model.subscriberCountsRead([HeraldName(name: "room.lamp", subscribers: 7)])
        let html = PageRenderer.render(model, token: "tok", second: 1_001, selected: nil)
        #expect(html.contains("<th scope=\"col\" class=\"num\">Subscribers</th>"))
        let row = html.components(separatedBy: "<tr data-name=\"room.lamp\">")[1].components(separatedBy: "</tr>")[0]
        #expect(row.hasSuffix("<td class=\"num\">1</td><td class=\"num\">7</td>"), "rate 1, then 7 subscribers")
        let unknown = html.components(separatedBy: "<tr data-name=\"x.&lt;script&gt;\">")[1]
            .components(separatedBy: "</tr>")[0]
        #expect(unknown.hasSuffix("<td class=\"num\"></td>"), "not counted: blank, not 0")
        #expect(html.contains("colspan=\"5\""), "the tree's inner rows span the new column")
    }
}
