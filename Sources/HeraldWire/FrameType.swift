/// The `type` byte of a frame (wire.md, "Frame types").
public enum FrameType: UInt8, Hashable, Sendable, CaseIterable, CustomStringConvertible {
    case hello = 0x01
    case post = 0x02
    case subscribe = 0x03
    case unsubscribe = 0x04
    case get = 0x05
    case ping = 0x06
    case status = 0x07
    case bye = 0x08
    case will = 0x09
    case monitor = 0x0A
    case names = 0x0B
    case plugin = 0x0C
    case welcome = 0x81
    case notify = 0x82
    case ack = 0x83
    case dropped = 0x84
    case error = 0x85
    case statusReport = 0x86
    case namesReport = 0x87

    /// Whether clients send this type to the daemon (as opposed to the daemon sending it).
    public var isClientFrame: Bool { rawValue < 0x80 }

    /// Whether this client frame's body starts with a `request` or `subscription` field (a `u32`): every client
    /// frame but `HELLO` and `BYE`. An `ERROR` answering such a frame carries that field (wire.md, `ERROR`).
    public var hasRequestField: Bool { isClientFrame && self != .hello && self != .bye }

    /// The type's name as wire.md spells it.
    public var description: String {
        switch self {
        case .hello: "HELLO"
        case .post: "POST"
        case .subscribe: "SUBSCRIBE"
        case .unsubscribe: "UNSUBSCRIBE"
        case .get: "GET"
        case .ping: "PING"
        case .status: "STATUS"
        case .bye: "BYE"
        case .will: "WILL"
        case .monitor: "MONITOR"
        case .names: "NAMES"
        case .plugin: "PLUGIN"
        case .welcome: "WELCOME"
        case .notify: "NOTIFY"
        case .ack: "ACK"
        case .dropped: "DROPPED"
        case .error: "ERROR"
        case .statusReport: "STATUS_REPORT"
        case .namesReport: "NAMES_REPORT"
        }
    }
}

/// The size of a frame's header: the `length` prefix, `type` and `flags`.
public let frameHeaderSize = 6
