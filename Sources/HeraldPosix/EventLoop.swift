#if os(Linux)
/// One thread's event loop: the one place where descriptors, timers, signals, wake-ups and batched sends meet
/// (Linux only; epoll underneath). heraldd, its plugin supervisor and the HTTP server all run on it.
///
/// The owner registers descriptors with the interest it has in them and a `Handler` of its own choosing (a value
/// that says what the descriptor is, such as "the listener" or "connection 12"), schedules timers with a handler,
/// and names the signals it wants as events. Each turn it calls ``wait(timeoutMilliseconds:)`` and then reads the
/// turn's events with ``event(at:)``, acting on each; the loop itself calls nothing back, so the owner may change
/// the loop (register, deregister, set an interest, schedule) while it handles an event.
///
/// Invariants:
/// - A descriptor is registered at most once, and its interest is what epoll watches: ``setInterest(_:for:)`` makes
///   a system call only when the interest changes.
/// - An event is never delivered to a registration made after the wait that reported it: a descriptor closed and
///   its number reused within one turn does not get the old descriptor's readiness (``event(at:)`` returns nil).
/// - A timer fires once, at or after its deadline, unless cancelled first; timers due at the same wait fire in
///   deadline order. The loop reads the clock only while a timer is scheduled.
/// - Signals named at ``init(signals:)`` are blocked for the calling thread and come only as ``Event/signal(_:)``.
///
/// Level-triggered throughout: an interest asked for late misses nothing. One thread at a time; only a ``Waker``
/// may be used from other threads.
public struct EventLoop<Handler>: ~Copyable {
    /// One thing that happened, for the owner to act on.
    public enum Event {
        /// A registered descriptor is ready: its handler and what it is ready for (error and hang-up are reported
        /// whatever the interest).
        case ready(Handler, Epoll.Events)
        /// A timer's deadline passed.
        case timer(Handler)
        /// One of the signals named at ``EventLoop/init(signals:)`` arrived.
        case signal(Int32)
        /// Some thread called ``Waker/wake()`` (several calls before a wait collapse into one event).
        case wakeup
    }

    /// Wakes the loop from another thread: an eventfd in the loop's epoll set.
    public final class Waker: Sendable {
        @usableFromInline let eventFD: EventFD

        init() throws(SystemError) {
            eventFD = try EventFD()
        }

        /// Makes the loop's current or next ``EventLoop/wait(timeoutMilliseconds:)`` return with a
        /// ``EventLoop/Event/wakeup``. Safe from any thread.
        public func wake() {
            // Fails only for a counter at its maximum, which means a wake-up is pending anyway.
            try? eventFD.signal()
        }
    }

    /// What the loop knows of a descriptor number.
    @usableFromInline
    enum Slot {
        case free
        case registered(Registration)
        /// The loop's own signalfd.
        case signals
        /// The loop's own eventfd.
        case waker
    }

    @usableFromInline
    struct Registration {
        @usableFromInline var interest: Epoll.Events
        @usableFromInline var handler: Handler
        /// Which registration of this descriptor number it is; carried in the epoll data word, so a stale report
        /// is recognised.
        @usableFromInline var generation: UInt32

        @usableFromInline
        init(interest: Epoll.Events, handler: Handler, generation: UInt32) {
            self.interest = interest
            self.handler = handler
            self.generation = generation
        }
    }

    @usableFromInline var epoll: Epoll
    @usableFromInline let signals: SignalFD?
    @usableFromInline var waker: Waker?
    /// Registrations by descriptor number (descriptors are small and dense).
    @usableFromInline var slots: [Slot] = []
    @usableFromInline var generation: UInt32 = 0
    /// Where epoll reports; made once.
    @usableFromInline let reports: UnsafeMutableBufferPointer<Epoll.Event>
    /// How many of the turn's events are in `reports`; the rest are in `extras`.
    @usableFromInline var reportCount = 0
    /// The turn's timer, signal and wake-up events, after the descriptors' reports.
    @usableFromInline var extras: [Event] = []
    @usableFromInline var timers = TimerQueue<Handler>()
    /// The writer of batched sends, when ``enableSendBatching(capacity:)`` gave one. Take it out (`take()`) to use
    /// it and put it back; it is the owner's to drop after a failed batch.
    public var sendBatcher: SendBatcher?

    /// The most reports one wait takes in; the rest wait for the next turn.
    public static var maxReports: Int { 256 }

    /// Creates a loop with its epoll instance, and a signalfd for `signals` when there are any.
    ///
    /// Create it on the main thread before any other thread starts: the signals are blocked for the calling thread,
    /// and threads started later inherit that (see ``SignalFD/init(signals:)``).
    ///
    /// - Parameter signals: The signals to receive as ``Event/signal(_:)``, e.g. `[SIGTERM, SIGINT]`.
    /// - Throws: ``SystemError`` when epoll or the signalfd cannot be created.
    public init(signals: [Int32] = []) throws(SystemError) {
        let epoll = try Epoll()
        var signalFD: SignalFD?
        var signalDescriptor: Int32?
        if !signals.isEmpty {
            let created = try SignalFD(signals: signals)
            let fd = created.rawValue
            try epoll.add(fd, events: .readable, data: Self.data(fd: fd, generation: 0))
            signalDescriptor = fd
            signalFD = consume created
        }
        self.epoll = epoll
        self.signals = signalFD
        reports = .allocate(capacity: Self.maxReports)
        if let signalDescriptor { setSlot(.signals, at: signalDescriptor) }
    }

    deinit {
        reports.deallocate()
    }

    /// Sets up batched sends with io_uring (``SendBatcher``), for owners that write many sockets a turn.
    ///
    /// - Throws: ``SystemError`` when the kernel offers no io_uring; the owner then sends one by one.
    public mutating func enableSendBatching(capacity: Int = SendBatcher.defaultCapacity) throws(SystemError) {
        sendBatcher = try SendBatcher(capacity: capacity)
    }

    /// The loop's waker, made on first use, for other threads to end a wait with ``Event/wakeup``.
    ///
    /// - Throws: ``SystemError`` when the eventfd cannot be made or watched.
    public mutating func makeWaker() throws(SystemError) -> Waker {
        if let waker { return waker }
        let made = try Waker()
        let fd = made.eventFD.rawValue
        try epoll.add(fd, events: .readable, data: Self.data(fd: fd, generation: 0))
        setSlot(.waker, at: fd)
        waker = made
        return made
    }

    // MARK: Registrations

    /// Starts watching `fd` for `interest`, reporting it with `handler`.
    ///
    /// - Parameters:
    ///   - fd: An open descriptor the loop does not watch yet; the owner keeps it open until ``deregister(_:)``.
    ///   - interest: What to report, usually ``Epoll/Events/readable`` and/or ``Epoll/Events/writable``.
    ///   - handler: Comes back with each of its events.
    /// - Throws: ``SystemError`` from `epoll_ctl` (e.g. EPERM for a regular file); nothing is registered then.
    @inlinable
    public mutating func register(_ fd: Int32, interest: Epoll.Events, handler: Handler) throws(SystemError) {
        precondition(fd >= 0, "register(\(fd)): not a descriptor")
        if Int(fd) < slots.count, case .free = slots[Int(fd)] {
        } else if Int(fd) < slots.count {
            preconditionFailure("descriptor \(fd) is registered twice")
        }
        generation &+= 1
        try epoll.add(fd, events: interest, data: Self.data(fd: fd, generation: generation))
        setSlot(.registered(Registration(interest: interest, handler: handler, generation: generation)), at: fd)
    }

    /// What `fd` is watched for now; nil when it is not registered.
    @inlinable
    public func interest(of fd: Int32) -> Epoll.Events? {
        guard Int(fd) < slots.count, case .registered(let registration) = slots[Int(fd)] else { return nil }
        return registration.interest
    }

    /// Watches `fd` for `interest` from now on; no system call when that is its interest already.
    ///
    /// - Throws: ``SystemError`` from `epoll_ctl`; the interest recorded is unchanged then.
    @inlinable
    public mutating func setInterest(_ interest: Epoll.Events, for fd: Int32) throws(SystemError) {
        guard case .registered(var registration) = slots[Int(fd)] else {
            preconditionFailure("setInterest for descriptor \(fd), which is not registered")
        }
        guard registration.interest != interest else { return }
        try epoll.modify(fd, events: interest, data: Self.data(fd: fd, generation: registration.generation))
        registration.interest = interest
        slots[Int(fd)] = .registered(registration)
    }

    /// Stops watching `fd`; its events still unread in this turn are not delivered. Nothing happens when it is not
    /// registered. Call it before closing the descriptor.
    @inlinable
    public mutating func deregister(_ fd: Int32) {
        guard Int(fd) < slots.count, case .registered = slots[Int(fd)] else { return }
        // Fails only if the descriptor is closed already, which removed it from the set anyway.
        try? epoll.remove(fd)
        slots[Int(fd)] = .free
    }

    /// Whether `fd` is registered.
    @inlinable
    public func isRegistered(_ fd: Int32) -> Bool {
        interest(of: fd) != nil
    }

    // MARK: Timers

    /// Fires ``Event/timer(_:)`` with `handler` at the first wait that returns at or after `deadline`.
    ///
    /// - Parameter deadline: Monotonic nanoseconds (``SystemClock/monotonicNanoseconds()``).
    /// - Returns: The timer, for ``cancel(_:)``.
    @inlinable @discardableResult
    public mutating func schedule(_ handler: Handler, at deadline: UInt64) -> TimerID {
        timers.schedule(handler, at: deadline)
    }

    /// Cancels a timer that has not fired; nothing happens for one that fired or was cancelled.
    @inlinable
    public mutating func cancel(_ timer: TimerID) {
        timers.cancel(timer)
    }

    /// The earliest deadline scheduled, if any.
    @inlinable
    public var nextDeadline: UInt64? {
        mutating get { timers.nextDeadline }
    }

    /// How many timers are scheduled.
    @inlinable
    public var scheduledTimers: Int { timers.count }

    // MARK: Waiting

    /// Waits until a descriptor is ready, a timer is due, a signal arrives or the loop is woken, or until
    /// `timeoutMilliseconds` pass, and collects the turn's events.
    ///
    /// The wait never lasts past the earliest timer. Signals are read and wake-ups drained here, so their
    /// descriptors never show as ready.
    ///
    /// - Parameter timeoutMilliseconds: The longest wait; -1 waits until something happens, 0 only looks.
    /// - Returns: How many events the turn has, for ``event(at:)``; 0 when the time passed with nothing to do or a
    ///   signal handler interrupted the wait.
    /// - Throws: ``SystemError`` when epoll fails (only for a bad argument) or the signalfd cannot be read.
    @inlinable
    public mutating func wait(timeoutMilliseconds: Int32 = -1) throws(SystemError) -> Int {
        extras.removeAll(keepingCapacity: true)
        var timeout = timeoutMilliseconds
        if timeout != 0, let due = timers.nextDeadline {
            let now = SystemClock.monotonicNanoseconds()
            // Rounded up, so the wake-up is never early and the loop does not spin on a 0 ms wait.
            let untilDue = due <= now ? 0 : Int32(clamping: (due - now + 999_999) / 1_000_000)
            timeout = timeout < 0 ? untilDue : min(timeout, untilDue)
        }
        reportCount = try epoll.wait(into: reports, timeoutMilliseconds: timeout)
        if signals != nil || waker != nil {
            // The loop's own descriptors are acted on here and taken out of the reports, so the owner sees only its
            // registrations' readiness.
            var kept = 0
            for index in 0..<reportCount {
                let fd = Int32(truncatingIfNeeded: reports[index].data)
                switch slots[Int(fd)] {
                case .signals:
                    try readSignals()
                case .waker:
                    _ = try waker?.eventFD.drain()
                    extras.append(.wakeup)
                default:
                    reports[kept] = reports[index]
                    kept += 1
                }
            }
            reportCount = kept
        }
        if !timers.isEmpty {
            let now = SystemClock.monotonicNanoseconds()
            while let handler = timers.takeDue(now: now) {
                extras.append(.timer(handler))
            }
        }
        return reportCount + extras.count
    }

    /// Event `index` of the last ``wait(timeoutMilliseconds:)``: the descriptors' readiness first, then timers,
    /// signals and wake-ups.
    ///
    /// - Returns: nil for a report the owner is not to see: its descriptor was deregistered (or registered anew)
    ///   since the wait.
    @inlinable
    public func event(at index: Int) -> Event? {
        guard index < reportCount else { return extras[index - reportCount] }
        let report = reports[index]
        let fd = Int(Int32(truncatingIfNeeded: report.data))
        guard case .registered(let registration) = slots[fd],
            registration.generation == UInt32(truncatingIfNeeded: report.data >> 32)
        else { return nil }
        return .ready(registration.handler, report.events)
    }

    @usableFromInline
    mutating func readSignals() throws(SystemError) {
        while true {
            let next: Int32?? = try signals?.readSignal()
            guard let signal = next ?? nil else { return }
            extras.append(.signal(signal))
        }
    }

    @usableFromInline
    mutating func setSlot(_ slot: Slot, at fd: Int32) {
        if Int(fd) >= slots.count {
            slots.append(contentsOf: repeatElement(.free, count: Int(fd) + 1 - slots.count))
        }
        slots[Int(fd)] = slot
    }

    @inlinable @inline(__always)
    static func data(fd: Int32, generation: UInt32) -> UInt64 {
        UInt64(generation) << 32 | UInt64(UInt32(bitPattern: fd))
    }
}
#endif
