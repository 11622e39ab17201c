import HeraldPosix
import HeraldWire

/// The I/O side of one client connection: its descriptor, its peer and whether it is closing; what the event loop
/// watches it for is the loop's. What to send and its partial input live in the broker; a channel only
/// moves bytes.
final class Channel {
    let descriptor: FileDescriptor
    let credentials: Credentials
    /// Set once the connection is closing: a timer closes it after ``Daemon/flushBound`` even if its output is not
    /// written (a client that stopped reading cannot hold a shutdown or a close forever).
    var isClosing = false
    /// Which accepted connection this is, counting from 1: a descriptor number is reused, this is not, so a
    /// handshake deadline left by a closed connection is never applied to the next one on its descriptor.
    let serial: UInt64
    /// Whether the connection is counted among those waiting to complete `HELLO` (`--max-incomplete-connections`)
    /// and has a handshake deadline pending.
    var awaitingHello = false
    /// The timer of its `--hello-timeout-ms`, while it waits for `HELLO`.
    var helloTimer: TimerID?
    /// The timer of its close bound, while it is closing.
    var closeTimer: TimerID?

    init(descriptor: consuming FileDescriptor, credentials: Credentials, serial: UInt64) {
        self.descriptor = descriptor
        self.credentials = credentials
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
