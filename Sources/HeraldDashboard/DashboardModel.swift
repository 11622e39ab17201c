public import Herald

/// What the dashboard knows of the session, as a value: the names, the last posts, the rates, the daemon's status and
/// what became of the page's requests. No I/O and no clock: each event carries its time.
///
/// Its owner feeds it what the `MONITOR`, `NAMES`, `GET` and `STATUS` answers bring, renders the first view from it,
/// and takes from it, a few times a second, the changes to stream to the open pages
/// (``DashboardModel+Updates.swift``). Everything in it is bounded: the names by ``NameTree``, the posts by
/// ``PostRing``, the rates by ``RateSeries``, the notices by ``maximumNotices``.
public struct DashboardModel: Sendable {
    /// The names and their values and rates.
    public internal(set) var names: NameTree
    /// The last posts.
    public internal(set) var posts: PostRing
    /// Every post, per second, over the last 5 minutes.
    public internal(set) var total = RateSeries()
    /// The daemon's counters as last read.
    public internal(set) var status: HeraldStatus?
    /// Posts the monitor lost because the dashboard fell behind (the `herald.dropped` notices' counts).
    public internal(set) var monitorDropped: UInt64 = 0
    /// What became of the page's last requests, newest last.
    public internal(set) var notices: [String] = []
    /// The most notices kept.
    public static let maximumNotices = 10

    var statusChanged = false
    var noticesChanged = false
    var droppedChanged = false
    /// Names with posts in each of the last two seconds, for the per-second rates: a name's rate is sent while it
    /// changes, and once more when it falls to 0.
    var activeSeconds: [Int64: Set<String>] = [:]

    /// An empty model keeping `recentPosts` posts and at most `maximumNames` names.
    public init(recentPosts: Int = 100, maximumNames: Int = 2048) {
        names = NameTree(capacity: maximumNames)
        posts = PostRing(capacity: recentPosts)
    }

    /// The `MONITOR` saw a post.
    ///
    /// - Parameter second: the wall-clock second it arrived in, for the rates.
    public mutating func postSeen(
        _ name: String,
        payload: some Collection<UInt8>,
        timeNanoseconds: UInt64,
        sequence: UInt64,
        setsRetained: Bool,
        second: Int64
    ) {
        total.record(second: second)
        names.postSeen(
            name,
            payload: payload,
            timeNanoseconds: timeNanoseconds,
            sequence: sequence,
            setsRetained: setsRetained,
            second: second
        )
        posts.append(name: name, timeNanoseconds: timeNanoseconds, payload: payload, retained: setsRetained)
        if names.entries[name] != nil, activeSeconds[second]?.contains(name) != true {
            activeSeconds[second, default: []].insert(name)
            // Only this second and the one before matter.
            if activeSeconds.count > 2 {
                activeSeconds = activeSeconds.filter { $0.key >= second - 1 }
            }
        }
    }

    /// The monitor lost `count` posts: its buffer was full.
    public mutating func postsDropped(_ count: UInt64) {
        monitorDropped += count
        droppedChanged = true
    }

    /// `NAMES` listed `name`, or `GET` read its retained value (`payload` nil: it has none), posted at
    /// `timeNanoseconds`.
    public mutating func retainedValueRead(
        _ name: String,
        payload: [UInt8]?,
        sequence: UInt64,
        timeNanoseconds: UInt64? = nil
    ) {
        names.retainedValueRead(name, payload: payload, sequence: sequence, timeNanoseconds: timeNanoseconds)
    }

    /// `NAMES` with counts answered (``Herald/names(withSubscriberCounts:)``): the listed names and their subscriber
    /// counts.
    public mutating func subscriberCountsRead(_ listed: [HeraldName]) {
        names.subscriberCountsRead(listed.map { ($0.name, $0.subscribers) })
    }

    /// `STATUS` answered.
    public mutating func statusRead(_ status: HeraldStatus) {
        self.status = status
        statusChanged = true
    }

    /// A request from the page was carried out or failed: `text` says which.
    public mutating func noticeAdded(_ text: String) {
        notices.append(text)
        if notices.count > Self.maximumNotices { notices.removeFirst(notices.count - Self.maximumNotices) }
        noticesChanged = true
    }

    /// One plugin's retained state.
    public struct Plugin: Sendable, Equatable {
        public var name: String
        public var state: String
        public var restarts: Int
        public var lastExit: String?
        public var pid: Int?
    }

    /// The plugins, from their retained `herald.plugin.NAME` values, sorted by name.
    public var plugins: [Plugin] {
        let prefix = Herald.pluginStateName("")
        return names.sortedNames.filter { $0.hasPrefix(prefix) }.compactMap { name in
            guard let bytes = names.entries[name]?.retained,
                case .object(let state)? = JSONValue.decode(bytes)
            else { return nil }
            return Plugin(
                name: String(name.dropFirst(prefix.count)),
                state: state["state"]?.stringValue ?? "unknown",
                restarts: state["restarts"]?.doubleValue.map { Int($0) } ?? 0,
                lastExit: state["lastExit"]?.stringValue,
                pid: state["pid"]?.doubleValue.map { Int($0) }
            )
        }
    }

    /// The bridges' retained states (`bridge.mqtt.HOST`, `bridge.dbus`, ...): name and value, sorted by name.
    public var bridges: [(name: String, value: [UInt8])] {
        names.sortedNames.filter { $0.hasPrefix("bridge.") }.compactMap { name in
            names.entries[name]?.retained.map { (name, $0) }
        }
    }
}
