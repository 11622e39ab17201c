/// Who sent a post, as the kernel reported it for the connection (`SO_PEERCRED`), never as the
/// sender claimed.
///
/// The broker's own copy of the pid/uid/gid triple because HeraldBroker is pure and sees no HeraldPosix type: the
/// daemon converts the kernel's `HeraldPosix.Credentials` to it in one place (`Sender.init(_:)` in HeraldDaemon's
/// Sender+Credentials.swift). The library shows apps a third copy, `HeraldNotification.Sender`, made from the
/// `NOTIFY` frame's fields, since an app sees no type of the internal modules.
public struct Sender: Hashable, Sendable {
    /// The poster's process ID.
    public var pid: Int32
    /// The poster's effective user ID when it connected.
    public var uid: UInt32
    /// The poster's effective group ID when it connected.
    public var gid: UInt32

    /// Creates a sender from its parts.
    public init(pid: Int32, uid: UInt32, gid: UInt32) {
        self.pid = pid
        self.uid = uid
        self.gid = gid
    }
}

/// Names one connection of the broker. The owner chooses the values: small non-negative integers
/// that are unique among open connections (the daemon uses the descriptor number), so the broker can
/// keep connections in an array.
public struct ConnectionID: Hashable, Sendable, Comparable, CustomStringConvertible {
    public let rawValue: Int

    public init(_ rawValue: Int) {
        precondition(rawValue >= 0, "connection ids are non-negative")
        self.rawValue = rawValue
    }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }

    public var description: String { "#\(rawValue)" }
}
