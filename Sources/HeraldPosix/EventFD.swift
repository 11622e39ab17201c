#if os(Linux)
internal import CHeraldShim

/// An eventfd counter used to wake an ``Epoll`` loop from another thread (Linux only).
///
/// Register ``rawValue`` for ``Epoll/Events/readable``; ``signal()`` makes it readable, and the loop calls ``drain()``
/// when it wakes. Several signals before a drain collapse into one wakeup. The descriptor is non-blocking and
/// close-on-exec.
///
/// To call ``signal()`` from other threads, keep the value where they can borrow it, such as a `let` property of a
/// `final class` that is `Sendable`.
public struct EventFD: ~Copyable, Sendable {
    private let descriptor: FileDescriptor

    /// The eventfd descriptor, for registering with ``Epoll``.
    public var rawValue: Int32 {
        descriptor.rawValue
    }

    /// Creates a non-blocking, close-on-exec eventfd with a zero counter.
    ///
    /// - Throws: ``SystemError``, e.g. EMFILE.
    public init() throws(SystemError) {
        descriptor = FileDescriptor(
            owning: try completedSyscall("create an eventfd") {
                herald_eventfd(0, HERALD_EFD_CLOEXEC | HERALD_EFD_NONBLOCK)
            }
        )
    }

    /// Makes the descriptor readable by adding 1 to its counter. Safe to call from any thread.
    ///
    /// - Throws: ``SystemError`` on an unexpected failure. A counter at its maximum (EAGAIN) is not an error: a wakeup
    ///   is already pending.
    public func signal() throws(SystemError) {
        var one: UInt64 = 1
        _ = try withUnsafeBytes(of: &one) { (bytes) throws(SystemError) in
            try descriptor.write(bytes)
        }
    }

    /// Resets the counter to zero so the descriptor is no longer readable.
    ///
    /// - Returns: how many signals had accumulated; 0 if none.
    /// - Throws: ``SystemError`` on an unexpected failure.
    @discardableResult
    public func drain() throws(SystemError) -> UInt64 {
        var count: UInt64 = 0
        let result = try withUnsafeMutableBytes(of: &count) { (bytes) throws(SystemError) in
            try descriptor.read(into: bytes)
        }
        return result == .wouldBlock ? 0 : count
    }
}
#endif
