import HeraldPosix
import HeraldWire

/// The I/O side of one client connection: its descriptor and what the event loop asked epoll to report
/// for it. What to send lives in the broker and its partial input in the daemon's `decoders`; a channel only
/// moves bytes.
final class Channel {
    let descriptor: FileDescriptor
    let credentials: Credentials
    /// The events registered with epoll now.
    var interest: Epoll.Events
    /// Set once the connection is closing: past this monotonic time it is closed even if its output is
    /// not written (a client that stopped reading cannot hold a shutdown or a close forever).
    var closeDeadline: UInt64?

    init(descriptor: consuming FileDescriptor, credentials: Credentials, interest: Epoll.Events) {
        self.descriptor = descriptor
        self.credentials = credentials
        self.interest = interest
    }
}

/// The listening socket, in a class so that dropping the reference closes it.
final class Listener {
    let descriptor: FileDescriptor

    init(descriptor: consuming FileDescriptor) {
        self.descriptor = descriptor
    }
}
