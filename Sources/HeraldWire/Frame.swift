/// One frame of the Herald wire protocol, in either direction. Field names follow wire.md.
public enum Frame: Hashable, Sendable {
    case hello(Hello)
    case post(Post)
    case subscribe(Subscribe)
    case unsubscribe(Unsubscribe)
    case get(Get)
    case ping(Ping)
    case status(Status)
    case bye
    case will(Will)
    case monitor(Monitor)
    case names(Names)
    case plugin(Plugin)
    case welcome(Welcome)
    case notify(Notify)
    case ack(Ack)
    case dropped(Dropped)
    case error(WireError)
    case statusReport(StatusReport)
    case namesReport(NamesReport)

    /// The frame's type byte.
    public var type: FrameType {
        switch self {
        case .hello: .hello
        case .post: .post
        case .subscribe: .subscribe
        case .unsubscribe: .unsubscribe
        case .get: .get
        case .ping: .ping
        case .status: .status
        case .bye: .bye
        case .will: .will
        case .monitor: .monitor
        case .names: .names
        case .plugin: .plugin
        case .welcome: .welcome
        case .notify: .notify
        case .ack: .ack
        case .dropped: .dropped
        case .error: .error
        case .statusReport: .statusReport
        case .namesReport: .namesReport
        }
    }

    /// The `request` or `subscription` field of a client frame, which an `ERROR` answering it carries; nil for
    /// `HELLO`, `BYE` and the daemon's frames.
    public var requestField: UInt32? {
        switch self {
        case .post(let post): post.request
        case .subscribe(let subscribe): subscribe.subscription
        case .unsubscribe(let unsubscribe): unsubscribe.subscription
        case .get(let get): get.request
        case .ping(let ping): ping.request
        case .status(let status): status.request
        case .will(let will): will.request
        case .monitor(let monitor): monitor.request
        case .names(let names): names.request
        case .plugin(let plugin): plugin.request
        case .hello, .bye, .welcome, .notify, .ack, .dropped, .error, .statusReport, .namesReport: nil
        }
    }
}

extension Frame {
    /// `HELLO`: the first frame of every connection.
    public struct Hello: Hashable, Sendable {
        public var minVersion: UInt16
        public var maxVersion: UInt16
        /// A label for logs and status, at most 64 bytes.
        public var client: String

        public init(
            minVersion: UInt16 = ProtocolVersion.supported.lowerBound,
            maxVersion: UInt16 = ProtocolVersion.supported.upperBound,
            client: String
        ) {
            self.minVersion = minVersion
            self.maxVersion = maxVersion
            self.client = client
        }
    }

    /// Where a relayed post was first made (wire.md, `POST`, version 2): carried by `POST` with `ORIGIN` and by
    /// every `NOTIFY` of that post.
    public struct Origin: Hashable, Sendable {
        /// The host the post was first made on, 1 to 255 bytes of UTF-8.
        public var host: String
        /// The daemon there that numbered it, 0 to 255 bytes of UTF-8.
        public var daemon: String
        /// Its sequence number there; 0 when unknown.
        public var sequence: UInt64

        public init(host: String, daemon: String = "", sequence: UInt64 = 0) {
            self.host = host
            self.daemon = daemon
            self.sequence = sequence
        }

        /// The bytes the origin takes in a frame: two `str8` and a `u64`.
        public var encodedSize: Int { 1 + host.utf8.count + 1 + daemon.utf8.count + 8 }
    }

    /// `POST`: publish `payload` to `name`.
    public struct Post: Hashable, Sendable {
        /// 0 for no reply; otherwise the daemon answers `ACK` with this value.
        public var request: UInt32
        public var name: String
        public var payload: [UInt8]
        /// Also store the payload as the name's retained value (an empty payload clears it).
        public var retain: Bool
        /// Version 2: answer only a refusal, not an acceptance, of a post with a `request`.
        public var quiet: Bool
        /// Version 2: where the post was first made, for a relayed post.
        public var origin: Origin?

        public init(
            request: UInt32 = 0,
            name: String,
            payload: [UInt8],
            retain: Bool = false,
            quiet: Bool = false,
            origin: Origin? = nil
        ) {
            self.request = request
            self.name = name
            self.payload = payload
            self.retain = retain
            self.quiet = quiet
            self.origin = origin
        }
    }

    /// `SUBSCRIBE`: start a subscription.
    public struct Subscribe: Hashable, Sendable {
        public var subscription: UInt32
        public var pattern: Pattern
        /// What the daemon does when this connection cannot keep up.
        public var overflow: OverflowPolicy
        /// Version 2: posts made on this connection do not match this subscription.
        public var noLocal: Bool

        public init(
            subscription: UInt32,
            pattern: Pattern,
            overflow: OverflowPolicy = .dropOldest,
            noLocal: Bool = false
        ) {
            self.subscription = subscription
            self.pattern = pattern
            self.overflow = overflow
            self.noLocal = noLocal
        }
    }

    /// `WILL`: a post the daemon makes if the connection ends without `BYE`.
    public struct Will: Hashable, Sendable {
        public var request: UInt32
        /// Milliseconds to wait after the connection ends, at most `Limits.maxWillDelayMilliseconds`.
        public var delayMilliseconds: UInt32
        /// The name to post to; empty withdraws the will.
        public var name: String
        public var payload: [UInt8]
        /// Also set (or, with an empty payload, clear) the name's retained value.
        public var retain: Bool

        public init(request: UInt32, delayMilliseconds: UInt32, name: String, payload: [UInt8], retain: Bool = false) {
            self.request = request
            self.delayMilliseconds = delayMilliseconds
            self.name = name
            self.payload = payload
            self.retain = retain
        }
    }

    /// `MONITOR`: make the connection a read-only monitor of every post.
    public struct Monitor: Hashable, Sendable {
        public var request: UInt32

        public init(request: UInt32) {
            self.request = request
        }
    }

    /// `NAMES`: ask for the names with a retained value or an exact subscription.
    public struct Names: Hashable, Sendable {
        public var request: UInt32
        /// Version 2's `COUNTS`: also give each name's subscriber count.
        public var counts: Bool

        public init(request: UInt32, counts: Bool = false) {
            self.request = request
            self.counts = counts
        }
    }

    /// `PLUGIN`: act on one of the plugins the daemon supervises.
    public struct Plugin: Hashable, Sendable {
        /// What to do (wire.md, `PLUGIN`).
        public enum Action: UInt8, Hashable, Sendable, CaseIterable, CustomStringConvertible {
            /// Start it, clearing `failed`.
            case start = 1
            /// Stop it: SIGTERM, then SIGKILL after 2 s.
            case stop = 2
            /// Stop it if it runs, then start it, clearing `failed`.
            case restart = 3
            /// Reread the plugin folders, as SIGHUP does; `name` is empty.
            case reload = 4

            /// The action as wire.md spells it.
            public var description: String {
                switch self {
                case .start: "START"
                case .stop: "STOP"
                case .restart: "RESTART"
                case .reload: "RELOAD"
                }
            }
        }

        public var request: UInt32
        public var action: Action
        /// The plugin's name; empty exactly for `.reload`.
        public var name: String

        public init(request: UInt32, action: Action, name: String) {
            self.request = request
            self.action = action
            self.name = name
        }
    }

    /// `NAMES_REPORT`: part of the answer to `NAMES`.
    public struct NamesReport: Hashable, Sendable {
        public var request: UInt32
        public var names: [String]
        /// Whether more `NAMES_REPORT` frames follow for the same request.
        public var more: Bool
        /// Version 2's `COUNTS`: each name's subscriber count, in the order of `names` (as many), or nil when the
        /// `NAMES` did not ask for them.
        public var counts: [UInt32]?

        public init(request: UInt32, names: [String], more: Bool = false, counts: [UInt32]? = nil) {
            precondition(counts == nil || counts!.count == names.count, "one count per name")
            self.request = request
            self.names = names
            self.more = more
            self.counts = counts
        }
    }

    /// `UNSUBSCRIBE`: end a subscription.
    public struct Unsubscribe: Hashable, Sendable {
        public var subscription: UInt32

        public init(subscription: UInt32) {
            self.subscription = subscription
        }
    }

    /// `GET`: ask for a name's retained value.
    public struct Get: Hashable, Sendable {
        public var request: UInt32
        public var name: String

        public init(request: UInt32, name: String) {
            self.request = request
            self.name = name
        }
    }

    /// `PING`: a barrier; the `ACK` proves every earlier frame of the connection was processed.
    public struct Ping: Hashable, Sendable {
        public var request: UInt32

        public init(request: UInt32) {
            self.request = request
        }
    }

    /// `STATUS`: ask for the daemon's counters.
    public struct Status: Hashable, Sendable {
        public var request: UInt32

        public init(request: UInt32) {
            self.request = request
        }
    }

    /// `WELCOME`: the daemon's answer to `HELLO`.
    public struct Welcome: Hashable, Sendable {
        public var version: UInt16
        public var maxSubscriptions: UInt16
        public var maxPayload: UInt32
        public var daemonPID: UInt32
        public var server: String

        public init(version: UInt16, maxSubscriptions: UInt16, maxPayload: UInt32, daemonPID: UInt32, server: String) {
            self.version = version
            self.maxSubscriptions = maxSubscriptions
            self.maxPayload = maxPayload
            self.daemonPID = daemonPID
            self.server = server
        }
    }

    /// `NOTIFY`: a delivered post, live or a replayed retained value.
    public struct Notify: Hashable, Sendable {
        /// The daemon-wide sequence number of the post.
        public var sequence: UInt64
        /// When the daemon received the post, in nanoseconds since 1970-01-01T00:00:00Z.
        public var time: UInt64
        /// The sender's process id, from SO_PEERCRED.
        public var pid: Int32
        /// The sender's user id, from SO_PEERCRED.
        public var uid: UInt32
        /// The sender's group id, from SO_PEERCRED.
        public var gid: UInt32
        /// 0 for a live post; for a retained value, the subscription or request it answers.
        public var subscription: UInt32
        /// Whether this is a replayed retained value.
        public var retained: Bool
        /// Version 2: this live post also set (or, empty, cleared) the name's retained value.
        public var retain: Bool
        public var name: String
        /// Version 2: where the post was first made, when its `POST` said.
        public var origin: Origin?
        public var payload: [UInt8]

        public init(
            sequence: UInt64,
            time: UInt64,
            pid: Int32,
            uid: UInt32,
            gid: UInt32,
            subscription: UInt32 = 0,
            retained: Bool = false,
            retain: Bool = false,
            name: String,
            origin: Origin? = nil,
            payload: [UInt8]
        ) {
            self.sequence = sequence
            self.time = time
            self.pid = pid
            self.uid = uid
            self.gid = gid
            self.subscription = subscription
            self.retained = retained
            self.retain = retain
            self.name = name
            self.origin = origin
            self.payload = payload
        }

        /// This notification as a connection of `version` receives it: version 1 has neither `RETAIN` nor an origin.
        public func forVersion(_ version: UInt16) -> Notify {
            guard version < ProtocolVersion.refusals, retain || origin != nil else { return self }
            var plain = self
            plain.retain = false
            plain.origin = nil
            return plain
        }
    }

    /// `ACK`: a request or subscription took effect.
    public struct Ack: Hashable, Sendable {
        public var request: UInt32
        public var sequence: UInt64

        public init(request: UInt32, sequence: UInt64) {
            self.request = request
            self.sequence = sequence
        }
    }

    /// `DROPPED`: live notifications the connection missed because it read too slowly.
    public struct Dropped: Hashable, Sendable {
        public var count: UInt64
        public var firstSequence: UInt64
        public var lastSequence: UInt64

        public init(count: UInt64, firstSequence: UInt64, lastSequence: UInt64) {
            self.count = count
            self.firstSequence = firstSequence
            self.lastSequence = lastSequence
        }
    }

    /// `STATUS_REPORT`: the daemon's counters.
    public struct StatusReport: Hashable, Sendable {
        public var request: UInt32
        public var pid: Int32
        public var startTime: UInt64
        public var connections: UInt32
        public var subscriptions: UInt32
        public var retained: UInt32
        public var posted: UInt64
        public var delivered: UInt64
        public var dropped: UInt64

        public init(
            request: UInt32,
            pid: Int32,
            startTime: UInt64,
            connections: UInt32,
            subscriptions: UInt32,
            retained: UInt32,
            posted: UInt64,
            delivered: UInt64,
            dropped: UInt64
        ) {
            self.request = request
            self.pid = pid
            self.startTime = startTime
            self.connections = connections
            self.subscriptions = subscriptions
            self.retained = retained
            self.posted = posted
            self.delivered = delivered
            self.dropped = dropped
        }
    }
}

/// What the daemon does when a connection cannot keep up (wire.md, "The outgoing queue").
///
/// Ordered from the most lenient to the strictest; a connection uses the strictest of its
/// subscriptions' policies.
public enum OverflowPolicy: UInt8, Hashable, Sendable, Comparable, CaseIterable, CustomStringConvertible {
    /// Drop the oldest queued notifications, with an exact `DROPPED` notice.
    case dropOldest = 0
    /// Keep the newest notification per name, then drop the oldest, with an exact `DROPPED` notice.
    case coalesce = 1
    /// Close the connection with `SLOW_CONSUMER`.
    case disconnect = 2

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }

    /// The policy's name as the CLI spells it: `drop-oldest`, `coalesce`, `disconnect`.
    public var description: String {
        switch self {
        case .dropOldest: "drop-oldest"
        case .coalesce: "coalesce"
        case .disconnect: "disconnect"
        }
    }
}

/// Flag bits (wire.md).
public enum FrameFlags {
    /// `POST`: also store the payload as the retained value.
    public static let retain: UInt8 = 0x01
    /// `POST`, version 2: an origin follows the name.
    public static let postOrigin: UInt8 = 0x02
    /// `POST`, version 2: no `ACK`, only a refusal answers the `request`.
    public static let quiet: UInt8 = 0x04
    /// `NOTIFY`: a replayed retained value.
    public static let retained: UInt8 = 0x01
    /// `NOTIFY`, version 2: the live post also set or cleared the retained value.
    public static let notifyRetain: UInt8 = 0x02
    /// `NOTIFY`, version 2: an origin follows the name.
    public static let notifyOrigin: UInt8 = 0x04
    /// `ERROR`, version 2: a refusal; the connection goes on.
    public static let refusal: UInt8 = 0x01
    /// `SUBSCRIBE`: the two bits of the overflow policy.
    public static let overflowMask: UInt8 = 0x03
    /// `SUBSCRIBE`, version 2: posts made on this connection do not match the subscription.
    public static let noLocal: UInt8 = 0x04
    /// `NAMES_REPORT`: more frames follow.
    public static let more: UInt8 = 0x01
    /// `NAMES` and `NAMES_REPORT`, version 2: each name's subscriber count, a `u32` after it in the report.
    public static let counts: UInt8 = 0x01
    /// `NAMES_REPORT`, version 2: a `u32` count follows each name (the bit is `NAMES`'s `COUNTS` moved past `MORE`).
    public static let namesReportCounts: UInt8 = 0x02
}
