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
    /// Which accepted connection this is, counting from 1: a descriptor number is reused, this is not, so a
    /// handshake deadline left by a closed connection is never applied to the next one on its descriptor.
    let serial: UInt64
    /// Whether the connection is counted among those waiting to complete `HELLO` (`--max-incomplete-connections`)
    /// and has a handshake deadline pending.
    var awaitingHello = false

    init(descriptor: consuming FileDescriptor, credentials: Credentials, interest: Epoll.Events, serial: UInt64) {
        self.descriptor = descriptor
        self.credentials = credentials
        self.interest = interest
        self.serial = serial
    }
}

/// The listening socket, in a class so that dropping the reference closes it.
final class Listener {
    let descriptor: FileDescriptor

    init(descriptor: consuming FileDescriptor) {
        self.descriptor = descriptor
    }
}
