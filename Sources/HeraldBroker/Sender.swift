/// Who sent a post, as the kernel reported it for the connection (`SO_PEERCRED`), never as the
/// sender claimed.
public struct Sender: Hashable, Sendable {
    public var pid: Int32
    public var uid: UInt32
    public var gid: UInt32

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
