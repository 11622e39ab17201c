public import Herald

/// The changes the open pages are sent, as the JSON of Server-Sent Events: `update` (names, posts, status, plugins,
/// bridges, notices), `tick` (the last second's rates) and `series` (the whole 5 minutes, when a stream starts).
extension DashboardModel {
    /// Everything a page needs to catch up, for a stream that just started: every name, the posts after
    /// `afterPost` (the newest its first view showed), the status, plugins, bridges and notices.
    public func fullUpdate(afterPost: UInt64, second: Int64) -> String {
        updateJSON(
            names: names.sortedNames,
            posts: posts.posts(after: afterPost),
            second: second,
            status: true,
            notices: true
        )
    }

    /// The changes since the last call, as one `update` event's JSON; nil when nothing changed.
    ///
    /// - Parameters:
    ///   - lastPost: the newest post index sent so far; advanced to the newest sent now.
    ///   - postLimit: the most posts sent at once: under a flood the page lists the newest, and the rates tell the
    ///     rest.
    ///   - nameLimit: the most names sent at once; the others follow in the next updates.
    public mutating func takeUpdate(
        lastPost: inout UInt64,
        second: Int64,
        postLimit: Int = 50,
        nameLimit: Int = 256
    ) -> String? {
        let changed = names.takeChanged(limit: nameLimit)
        let newPosts = posts.posts(after: lastPost, limit: postLimit)
        lastPost = posts.newestIndex
        defer {
            statusChanged = false
            noticesChanged = false
            droppedChanged = false
        }
        guard !changed.isEmpty || !newPosts.isEmpty || statusChanged || noticesChanged || droppedChanged else {
            return nil
        }
        return updateJSON(
            names: changed,
            posts: newPosts,
            second: second,
            status: statusChanged,
            notices: noticesChanged
        )
    }

    private func updateJSON(
        names list: [String],
        posts list2: [PostRing.Post],
        second: Int64,
        status: Bool,
        notices: Bool
    )
        -> String
    {
        var fields: [String] = []
        let nameObjects = list.compactMap { name -> String? in
            guard let entry = names.entries[name] else { return nil }
            let value = entry.retained.map { Markup.json(Markup.prettyJSON($0, truncated: entry.retainedTruncated)) }
            let last = entry.lastPostNanoseconds.map { Markup.json(Markup.time(nanoseconds: $0)) }
            return "{\"name\":\(Markup.json(name)),\"value\":\(value ?? "null"),\"last\":\(last ?? "null"),"
                + "\"rate\":\(entry.series.count(at: second - 1)),"
                + "\"subscribers\":\(entry.subscribers.map(String.init) ?? "null")}"
        }
        fields.append("\"names\":[\(nameObjects.joined(separator: ","))]")
        let postObjects = list2.map { post in
            "{\"index\":\(post.index),\"name\":\(Markup.json(post.name)),"
                + "\"time\":\(Markup.json(Markup.time(nanoseconds: post.timeNanoseconds))),"
                + "\"payload\":\(Markup.json(String(decoding: post.payload, as: UTF8.self) + (post.truncated ? "…" : ""))),"
                + "\"retained\":\(post.retained)}"
        }
        fields.append("\"posts\":[\(postObjects.joined(separator: ","))]")
        if list.contains(where: { $0.hasPrefix("herald.plugin.") }) || status {
            let objects = plugins.map { plugin in
                "{\"name\":\(Markup.json(plugin.name)),\"state\":\(Markup.json(plugin.state)),"
                    + "\"restarts\":\(plugin.restarts),\"lastExit\":\(plugin.lastExit.map(Markup.json) ?? "null")}"
            }
            fields.append("\"plugins\":[\(objects.joined(separator: ","))]")
        }
        if list.contains(where: { $0.hasPrefix("bridge.") }) || status {
            let objects = bridges.map { bridge in
                "{\"name\":\(Markup.json(bridge.name)),\"value\":\(Markup.json(Markup.prettyJSON(bridge.value)))}"
            }
            fields.append("\"bridges\":[\(objects.joined(separator: ","))]")
        }
        if status, let current = self.status {
            fields.append("\"status\":\(Self.statusJSON(current))")
        }
        if notices {
            fields.append("\"notices\":[\(self.notices.map(Markup.json).joined(separator: ","))]")
        }
        fields.append("\"monitorDropped\":\(monitorDropped),\"untracked\":\(names.untrackedPosts)")
        return "{" + fields.joined(separator: ",") + "}"
    }

    /// The status rows the page shows, in order: label and value.
    public static func statusRows(_ status: HeraldStatus) -> [(String, String)] {
        var rows: [(String, String)] = []
        rows.append(("pid", String(status.pid)))
        rows.append(("started", Markup.time(nanoseconds: status.startTimeNanoseconds)))
        rows.append(("connections", String(status.connections)))
        rows.append(("subscriptions", String(status.subscriptions)))
        rows.append(("retained names", String(status.retained)))
        rows.append(("posted", String(status.posted)))
        rows.append(("delivered", String(status.delivered)))
        rows.append(("dropped", String(status.dropped)))
        return rows
    }

    static func statusJSON(_ status: HeraldStatus) -> String {
        let rows = statusRows(status).map { "[\(Markup.json($0.0)),\(Markup.json($0.1))]" }
        return "[" + rows.joined(separator: ",") + "]"
    }

    /// The fields of the `tick` event for `second`, just past: every post counted in it, and the rate of each name
    /// that posted in it or in the second before (so a rate that fell to 0 is sent once). Without the closing brace:
    /// each stream adds its selected name's count.
    public func tickFields(second: Int64) -> String {
        var active = activeSeconds[second] ?? []
        active.formUnion(activeSeconds[second - 1] ?? [])
        let rates = active.sorted().map { "\(Markup.json($0)):\(names.posts(of: $0, at: second))" }
        return "{\"second\":\(second),\"total\":\(total.count(at: second)),\"rates\":{\(rates.joined(separator: ","))}"
    }

    /// The `series` event: the 5 minutes ending at `second`, for all posts and for `selected`.
    public func seriesJSON(endingAt second: Int64, selected: String?) -> String {
        func list(_ values: [UInt32]) -> String { "[" + values.map(String.init).joined(separator: ",") + "]" }
        let named = selected.map {
            names.entries[$0]?.series.values(endingAt: second) ?? Array(repeating: 0, count: total.capacity)
        }
        return "{\"second\":\(second),\"total\":\(list(total.values(endingAt: second))),"
            + "\"selected\":\(selected.map(Markup.json) ?? "null"),\"named\":\(named.map(list) ?? "null")}"
    }
}
