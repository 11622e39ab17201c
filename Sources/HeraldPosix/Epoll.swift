#if os(Linux)
internal import CHeraldShim

/// An epoll instance: the readiness multiplexer of an event loop (Linux only).
///
/// Descriptors are registered by number with a 64-bit `data` word that comes back with each event, usually an index
/// or ID that tells the loop which connection is ready. The instance is close-on-exec and is closed when the value
/// goes away.
public struct Epoll: ~Copyable, Sendable {
    /// The readiness conditions to wait for, and that ``Event`` reports.
    public struct Events: OptionSet, Hashable, Sendable {
        /// The raw `EPOLL*` bits.
        public let rawValue: UInt32

        /// Wraps raw `EPOLL*` bits.
        public init(rawValue: UInt32) {
            self.rawValue = rawValue
        }

        // Computed, not `static let`: a stored static is initialised lazily, so every use from another module
        // went through `swift_once` (heraldd asks for these several times per connection per turn).
        /// `EPOLLIN`: data to read, a connection to accept, or end of file.
        public static var readable: Events { Events(rawValue: HERALD_EPOLLIN) }
        /// `EPOLLOUT`: room to write.
        public static var writable: Events { Events(rawValue: HERALD_EPOLLOUT) }
        /// `EPOLLERR`: an error is pending; always reported, need not be asked for.
        public static var error: Events { Events(rawValue: HERALD_EPOLLERR) }
        /// `EPOLLHUP`: both directions are closed; always reported, need not be asked for.
        public static var hangup: Events { Events(rawValue: HERALD_EPOLLHUP) }
        /// `EPOLLRDHUP`: the peer shut down its writing side (we will read end of file).
        public static var readHangup: Events { Events(rawValue: HERALD_EPOLLRDHUP) }
        /// `EPOLLET`: edge-triggered, reported once per change instead of while the condition holds.
        public static var edgeTriggered: Events { Events(rawValue: HERALD_EPOLLET) }
    }

    /// One readiness report from ``wait(into:timeoutMilliseconds:)``.
    public struct Event: Hashable, Sendable {
        /// What the descriptor is ready for.
        public var events: Events
        /// The `data` word the descriptor was registered with.
        public var data: UInt64

        /// Creates an event; ``wait(into:timeoutMilliseconds:)`` fills these in.
        public init(events: Events = [], data: UInt64 = 0) {
            self.events = events
            self.data = data
        }
    }

    private let descriptor: FileDescriptor
    /// Where `epoll_wait` puts its reports, made once: a temporary of this size per wait is a heap allocation
    /// (it is over the stack's 1 KiB allowance), ~350 instructions of every turn of heraldd's loop. Only
    /// ``wait(into:timeoutMilliseconds:)`` uses it, and that is `mutating`: never two waits at once.
    private nonisolated(unsafe) let reports: UnsafeMutableBufferPointer<herald_epoll_event>

    /// The epoll descriptor, for registering this instance inside another one.
    public var rawValue: Int32 {
        descriptor.rawValue
    }

    /// Creates an epoll instance with `EPOLL_CLOEXEC`.
    ///
    /// - Throws: ``SystemError``, e.g. EMFILE.
    public init() throws(SystemError) {
        descriptor = FileDescriptor(owning: try completedSyscall("create an epoll instance") { herald_epoll_create() })
        reports = .allocate(capacity: Self.maxReports)
    }

    deinit {
        reports.deallocate()
    }

    /// The most events one ``wait(into:timeoutMilliseconds:)`` reports.
    static let maxReports = 1024

    /// Starts watching `fd`.
    ///
    /// - Parameters:
    ///   - fd: the descriptor; its owner must remove it (or close it) before the number can be reused.
    ///   - events: the conditions to report, plus options such as ``Events/edgeTriggered``.
    ///   - data: returned with every event for `fd`.
    /// - Throws: ``SystemError``, e.g. EEXIST if `fd` is already registered, EPERM for a regular file.
    public func add(_ fd: Int32, events: Events, data: UInt64) throws(SystemError) {
        try control(HERALD_EPOLL_CTL_ADD, fd, events: events, data: data, verb: "add")
    }

    /// Changes what `fd` is watched for, and its data word.
    ///
    /// - Throws: ``SystemError``, e.g. ENOENT if `fd` is not registered.
    public func modify(_ fd: Int32, events: Events, data: UInt64) throws(SystemError) {
        try control(HERALD_EPOLL_CTL_MOD, fd, events: events, data: data, verb: "modify")
    }

    /// Stops watching `fd`. Closing the last descriptor for a file removes it implicitly too.
    ///
    /// - Throws: ``SystemError``, e.g. ENOENT if `fd` is not registered.
    public func remove(_ fd: Int32) throws(SystemError) {
        try control(HERALD_EPOLL_CTL_DEL, fd, events: [], data: 0, verb: "remove")
    }

    private func control(_ op: Int32, _ fd: Int32, events: Events, data: UInt64, verb: String) throws(SystemError) {
        _ = try completedSyscall("\(verb) descriptor \(fd) in epoll instance \(descriptor.rawValue)") {
            herald_epoll_ctl(descriptor.rawValue, op, fd, events.rawValue, data)
        }
    }

    /// Waits until at least one watched descriptor is ready, or the timeout passes.
    ///
    /// - Parameters:
    ///   - buffer: where to store the events; at most 1024 are reported per call, however large it is.
    ///   - timeoutMilliseconds: how long to wait; -1 waits forever, 0 polls.
    /// - Returns: how many events were stored at the start of `buffer`; 0 on timeout or when a signal interrupted the
    ///   wait, so the loop can check its state and wait again.
    /// - Throws: ``SystemError`` (in practice only for a bad argument).
    public mutating func wait(
        into buffer: UnsafeMutableBufferPointer<Event>,
        timeoutMilliseconds: Int32
    ) throws(SystemError) -> Int {
        precondition(!buffer.isEmpty, "Epoll.wait needs room for at least one event")
        let capacity = min(buffer.count, Self.maxReports)
        let result = herald_epoll_wait(descriptor.rawValue, reports.baseAddress, Int32(capacity), timeoutMilliseconds)
        if result == -1 {
            // Not retried: the timeout would restart from the beginning. The caller's loop waits again.
            if Errno.current == .interrupted {
                return 0
            }
            // Hand the failure to the shared policy (EBADF traps, the rest throw); errno is still epoll_wait's.
            _ = try completedSyscall("wait on epoll instance \(descriptor.rawValue)") { result }
        }
        let count = Int(result)
        for index in 0..<count {
            buffer[index] = Event(events: Events(rawValue: reports[index].events), data: reports[index].data)
        }
        return count
    }
}
#endif
