import HeraldBroker
import HeraldPosix

/// The daemon's one crossing of the pid/uid/gid triple from HeraldPosix to HeraldBroker.
///
/// The triple exists once per layer, where a module boundary needs its own: `Credentials` is what the kernel
/// reports for a socket (`SO_PEERCRED`), `Sender` is what the pure broker, which sees no HeraldPosix type, stamps on
/// a post. heraldd makes every `Sender` with this initializer (an accepted connection's, and its own for the posts
/// it makes as the daemon), so the two cannot drift apart field by field.
extension Sender {
    /// The sender the broker stamps on posts, from the credentials the kernel reported.
    init(_ credentials: Credentials) {
        self.init(pid: credentials.pid, uid: credentials.uid, gid: credentials.gid)
    }
}
