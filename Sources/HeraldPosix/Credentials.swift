/// Who is at the other end of a Unix socket, as the kernel vouches for it.
///
/// heraldd converts it to the broker's `HeraldBroker.Sender` in one place (HeraldDaemon's Sender+Credentials.swift):
/// the pure broker sees no HeraldPosix type.
public struct Credentials: Hashable, Sendable {
    /// The peer's process ID.
    public var pid: Int32
    /// The peer's effective user ID when it connected.
    public var uid: UInt32
    /// The peer's effective group ID when it connected.
    public var gid: UInt32

    /// Creates credentials from their parts.
    public init(pid: Int32, uid: UInt32, gid: UInt32) {
        self.pid = pid
        self.uid = uid
        self.gid = gid
    }
}
