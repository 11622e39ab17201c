/// The dashboard's page as the server renders it: the whole current state in plain HTML tables and forms, so that it
/// reads and works with JavaScript off and with a screen reader (captions, header cells with scopes, labelled
/// fields). The script then keeps the same elements up to date from the event stream.
public enum PageRenderer {
    /// The page for `model` as of `second`.
    ///
    /// - Parameters:
    ///   - token: the dashboard's token, for the forms' and links' URLs.
    ///   - selected: the name whose rate is plotted besides all posts.
    public static func render(_ model: DashboardModel, token: String, second: Int64, selected: String?) -> String {
        let query = "?token=" + Markup.html(token)
        let totalValues = model.total.values(endingAt: second - 1)
        let namedValues = selected.map { model.names.entries[$0]?.series.values(endingAt: second - 1) ?? [] }
        func list(_ values: [UInt32]) -> String { "[" + values.map(String.init).joined(separator: ",") + "]" }
        var html = """
            <!doctype html>
            <html lang="en">
            <head>
            <meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <meta name="referrer" content="same-origin">
            <title>Herald dashboard</title>
            <style>\(PageAssets.css)</style>
            </head>
            <body data-token="\(Markup.html(token))" data-posts="\(model.posts.capacity)" \
            data-last-post="\(model.posts.newestIndex)" data-selected="\(Markup.html(selected ?? ""))" \
            data-total="\(list(totalValues))" data-named="\(namedValues.map(list) ?? "")">
            <header><h1>Herald dashboard</h1>
            <p id="connection" role="status" aria-live="polite">As of \(Markup.time(nanoseconds: UInt64(second) * 1_000_000_000)); \
            reload to refresh (live updates need JavaScript).</p></header>
            <main>
            <section aria-labelledby="rate-heading">
            <h2 id="rate-heading">Posts per second, last 5 minutes</h2>
            \(plot(totalValues, namedValues, selected: selected))
            <p><span class="legend-total">■ all posts</span> · <span class="legend-named">■ <span id="selected-label">\
            \(Markup.html(selected ?? "choose a name below to plot it"))</span></span> · \
            <span id="dropped">\(model.monitorDropped) posts missed by the dashboard, \(model.names.untrackedPosts) \
            posts to names past its limit</span></p>
            </section>
            <div class="grid">
            """
        html += statusSection(model)
        html += pluginsSection(model, query: query)
        html += bridgesSection(model)
        html += postSection(query: query)
        html += "</div>\n"
        html += namesSection(model, query: query, second: second, selected: selected)
        html += postsSection(model)
        html += """
            <section aria-labelledby="notices-heading"><h2 id="notices-heading">Requests</h2>
            <p id="action-result" role="status" aria-live="polite"></p>
            <ul id="notices">\(model.notices.map { "<li>\(Markup.html($0))</li>" }.joined())</ul></section>
            </main>
            <script>\(PageAssets.script)</script>
            </body>
            </html>

            """
        return html
    }

    static func plot(_ total: [UInt32], _ named: [UInt32]?, selected: String?) -> String {
        let width = 600.0
        let height = 160.0
        let highest: UInt32 = max(total.max() ?? 0, named?.max() ?? 0)
        let maximum = max(1, highest)
        func points(_ values: [UInt32]) -> String {
            guard values.count > 1 else { return "" }
            return values.enumerated().map { index, value in
                let x = Double(index) * width / Double(values.count - 1)
                let y = height - 5 - Double(value) / Double(maximum) * (height - 15)
                return "\(Int(x * 10) / 10),\(Int(y * 10) / 10)"
            }.joined(separator: " ")
        }
        let description =
            "Posts per second over the last 5 minutes: all posts"
            + (selected.map { " and \(Markup.html($0))" } ?? "") + "; the highest is \(maximum) a second."
        return """
            <svg id="plot" viewBox="0 0 600 160" preserveAspectRatio="none" role="img" aria-labelledby="plot-title">
            <title id="plot-title">\(description)</title>
            <polyline id="plot-total" class="total" vector-effect="non-scaling-stroke" points="\(points(total))"/>
            <polyline id="plot-named" class="named" vector-effect="non-scaling-stroke" \
            points="\(named.map(points) ?? "")"/>
            </svg>
            <p class="axis"><span>5 minutes ago</span><span>top: <span id="plot-max">\(maximum)</span> posts/s</span>\
            <span>now</span></p>
            """
    }

    static func statusSection(_ model: DashboardModel) -> String {
        let rows = model.status.map(DashboardModel.statusRows) ?? []
        let body =
            rows.isEmpty
            ? "<tr><td colspan=\"2\">not read yet</td></tr>"
            : rows.map {
                "<tr><th scope=\"row\">\(Markup.html($0.0))</th><td class=\"num\">\(Markup.html($0.1))</td></tr>"
            }
            .joined()
        return """
            <section aria-labelledby="status-heading"><h2 id="status-heading">Daemon</h2>
            <table><caption>heraldd's status</caption><tbody id="status-body">\(body)</tbody></table></section>

            """
    }

    static func pluginsSection(_ model: DashboardModel, query: String) -> String {
        let plugins = model.plugins
        var body = plugins.map { plugin in
            let name = Markup.html(plugin.name)
            let buttons = ["start", "stop", "restart"].map { action in
                "<button type=\"submit\" name=\"action\" value=\"\(action)\" aria-label=\"\(action) \(name)\">"
                    + "\(action)</button>"
            }.joined(separator: " ")
            return "<tr data-plugin=\"\(name)\"><th scope=\"row\">\(name)</th>"
                + "<td class=\"state-\(Markup.html(plugin.state))\">\(Markup.html(plugin.state))</td>"
                + "<td class=\"num\">\(plugin.restarts)</td><td>\(Markup.html(plugin.lastExit ?? "-"))</td>"
                + "<td><form method=\"post\" action=\"/plugin\(query)\" data-js>"
                + "<input type=\"hidden\" name=\"name\" value=\"\(name)\">\(buttons)</form></td></tr>"
        }.joined()
        if plugins.isEmpty { body = "<tr><td colspan=\"5\">no plugins</td></tr>" }
        return """
            <section aria-labelledby="plugins-heading"><h2 id="plugins-heading">Plugins</h2>
            <table><caption>The plugins heraldd supervises</caption>
            <thead><tr><th scope="col">Plugin</th><th scope="col">State</th><th scope="col" class="num">Restarts</th>\
            <th scope="col">Last exit</th><th scope="col">Actions</th></tr></thead>
            <tbody id="plugins-body">\(body)</tbody></table></section>

            """
    }

    static func bridgesSection(_ model: DashboardModel) -> String {
        let bridges = model.bridges
        var body = bridges.map { bridge in
            "<tr><th scope=\"row\">\(Markup.html(bridge.name))</th>"
                + "<td><pre>\(Markup.html(Markup.prettyJSON(bridge.value)))</pre></td></tr>"
        }.joined()
        if bridges.isEmpty { body = "<tr><td colspan=\"2\">no bridge has posted its state</td></tr>" }
        return """
            <section aria-labelledby="bridges-heading"><h2 id="bridges-heading">Bridges</h2>
            <table><caption>The bridges' retained states (bridge.mqtt.*, bridge.dbus)</caption>
            <thead><tr><th scope="col">Bridge</th><th scope="col">State</th></tr></thead>
            <tbody id="bridges-body">\(body)</tbody></table></section>

            """
    }

    static func postSection(query: String) -> String {
        """
        <section aria-labelledby="post-heading"><h2 id="post-heading">Post</h2>
        <form class="post" method="post" action="/post\(query)" data-js>
        <label for="post-name">Name</label>
        <input id="post-name" name="name" required placeholder="session.example" autocomplete="off">
        <label for="post-payload">Payload (a JSON object)</label>
        <textarea id="post-payload" name="payload">{}</textarea>
        <label><input type="checkbox" name="retain" value="on"> Retain (keep as the name's value)</label>
        <button type="submit">Post</button>
        </form></section>

        """
    }

    static func namesSection(_ model: DashboardModel, query: String, second: Int64, selected: String?) -> String {
        var rows: [String] = []
        var shown: Set<String> = []
        for name in model.names.sortedNames {
            let segments = name.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            // The tree's inner nodes that are not names themselves get a row of their own.
            for depth in 1..<max(segments.count, 1) {
                let prefix = segments[..<depth].joined(separator: ".")
                guard model.names.entries[prefix] == nil, shown.insert(prefix).inserted else { continue }
                rows.append(
                    "<tr class=\"group\" data-group=\"\(Markup.html(prefix))\"><th scope=\"row\" class=\"tree\" "
                        + "colspan=\"5\" style=\"padding-left:\(Double(depth - 1) + 0.5)em\" "
                        + "aria-label=\"\(Markup.html(prefix))\">\(Markup.html(segments[depth - 1])).</th></tr>"
                )
            }
            let entry = model.names.entries[name]!
            let escaped = Markup.html(name)
            let value = entry.retained.map { Markup.html(Markup.prettyJSON($0, truncated: entry.retainedTruncated)) }
            let current = name == selected ? " aria-current=\"true\"" : ""
            rows.append(
                "<tr data-name=\"\(escaped)\"><th scope=\"row\" class=\"tree\" "
                    + "style=\"padding-left:\(Double(segments.count - 1) + 0.5)em\"><a class=\"plot-name\" "
                    + "data-name=\"\(escaped)\" aria-label=\"\(escaped)\" title=\"\(escaped)\" "
                    + "href=\"\(query)&amp;name=\(Markup.html(percentEncoded(name)))\"\(current)>"
                    + "\(Markup.html(segments.last ?? name))</a></th><td><pre>\(value ?? "")</pre></td>"
                    + "<td>\(entry.lastPostNanoseconds.map { Markup.time(nanoseconds: $0) } ?? "")</td>"
                    + "<td class=\"num\">\(entry.series.count(at: second - 1))</td>"
                    + "<td class=\"num\">\(entry.subscribers.map(String.init) ?? "")</td></tr>"
            )
        }
        let rowsText = rows.joined(separator: "\n")
        return """
            <section aria-labelledby="names-heading"><h2 id="names-heading">Names</h2>
            <table id="names"><caption>Every name heraldd knows or the dashboard saw posted, as a tree: \
            choose one to plot its rate</caption>
            <thead><tr><th scope="col">Name</th><th scope="col">Retained value</th><th scope="col">Last post</th>\
            <th scope="col" class="num">Posts/s</th><th scope="col" class="num">Subscribers</th></tr></thead>
            <tbody id="names-body">
            \(rowsText)
            </tbody></table></section>

            """
    }

    static func postsSection(_ model: DashboardModel) -> String {
        let rows = model.posts.all.reversed().map { post in
            "<tr><td>\(Markup.time(nanoseconds: post.timeNanoseconds))</td><th scope=\"row\">\(Markup.html(post.name))</th>"
                + "<td><pre>\(Markup.html(String(decoding: post.payload, as: UTF8.self) + (post.truncated ? "…" : "")))"
                + "</pre></td><td>\(post.retained ? "yes" : "no")</td></tr>"
        }.joined(separator: "\n")
        return """
            <section aria-labelledby="posts-heading"><h2 id="posts-heading">Last posts</h2>
            <table id="posts"><caption>The last \(model.posts.capacity) posts, newest first</caption>
            <thead><tr><th scope="col">Time</th><th scope="col">Name</th><th scope="col">Payload</th>\
            <th scope="col">Retained</th></tr></thead>
            <tbody id="posts-body">
            \(rows)
            </tbody></table></section>

            """
    }

    /// `text` with everything but unreserved characters percent-encoded, for a query value.
    static func percentEncoded(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = String(byte, radix: 16, uppercase: true)
                out += "%" + (hex.count == 1 ? "0" : "") + hex
            }
        }
        return out
    }
}
