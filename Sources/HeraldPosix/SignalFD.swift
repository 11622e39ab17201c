#if os(Linux)
internal import CHeraldShim

/// A signalfd: signals delivered as readable events instead of asynchronous handlers (Linux only).
///
/// This is how the daemon handles SIGTERM and SIGINT inside its ``Epoll`` loop without code running in a signal
/// handler. The descriptor is non-blocking and close-on-exec.
public struct SignalFD: ~Copyable, Sendable {
    private let descriptor: FileDescriptor

    /// The signalfd descriptor, for registering with ``Epoll``.
    public var rawValue: Int32 {
        descriptor.rawValue
    }

    /// Blocks `signals` for the calling thread and creates a signalfd that reports them.
    ///
    /// A blocked signal stays pending until it is read here, instead of running its default action. Threads inherit
    /// the signal mask of the thread that creates them, so call this on the main thread before starting any other
    /// thread; a thread that does not block the signals could have them delivered to it and be killed.
    ///
    /// - Parameter signals: the signal numbers, e.g. `[SIGTERM, SIGINT]`.
    /// - Throws: ``SystemError``, e.g. EINVAL for an invalid signal number.
    public init(signals: [Int32]) throws(SystemError) {
        let rawValue = try signals.withUnsafeBufferPointer { (buffer) throws(SystemError) in
            try completedSyscall("create a signalfd for signals \(signals)") {
                herald_signalfd(buffer.baseAddress, Int32(buffer.count))
            }
        }
        descriptor = FileDescriptor(owning: rawValue)
    }

    /// Reads the next pending signal.
    ///
    /// - Returns: the signal number, or nil when none is pending.
    /// - Throws: ``SystemError`` on an unexpected failure.
    public func readSignal() throws(SystemError) -> Int32? {
        try retryingSyscall("read signalfd \(descriptor.rawValue)") { herald_signalfd_read(descriptor.rawValue) }.value
    }

    /// Unblocks `signals` for the calling thread, undoing the blocking done by ``init(signals:)``.
    ///
    /// A signal that is still pending is delivered as soon as it is unblocked, so read it first.
    ///
    /// - Throws: ``SystemError``, e.g. EINVAL for an invalid signal number.
    public static func unblock(signals: [Int32]) throws(SystemError) {
        _ = try signals.withUnsafeBufferPointer { (buffer) throws(SystemError) in
            try completedSyscall("unblock signals \(signals)") {
                herald_unblock_signals(buffer.baseAddress, Int32(buffer.count))
            }
        }
    }
}
#endif
