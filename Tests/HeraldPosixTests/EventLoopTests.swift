#if os(Linux)
import Glibc
import HeraldPosix
import Testing

@Suite struct EventLoopTests {
    /// What a test's registrations and timers stand for.
    enum Handler: Equatable {
        case socket(String)
        case timer(Int)
    }

    /// One event, comparable, for assertions.
    enum Seen: Equatable {
        case ready(Handler, readable: Bool, writable: Bool)
        case timer(Handler)
        case signal(Int32)
        case wakeup
        case skipped
    }

    private func events(_ loop: inout EventLoop<Handler>, timeout: Int32) throws -> [Seen] {
        let count = try loop.wait(timeoutMilliseconds: timeout)
        return (0..<count).map { index in
            switch loop.event(at: index) {
            case .ready(let handler, let events):
                .ready(handler, readable: events.contains(.readable), writable: events.contains(.writable))
            case .timer(let handler): .timer(handler)
            case .signal(let signal): .signal(signal)
            case .wakeup: .wakeup
            case nil: .skipped
            }
        }
    }

    private func sendByte(_ socket: borrowing FileDescriptor) throws {
        let byte: [UInt8] = [7]
        _ = try byte.withUnsafeBytes { try socket.send($0) }
    }

    private func received(by socket: borrowing FileDescriptor) throws -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: 16)
        let result = try buffer.withUnsafeMutableBytes { try socket.read(into: $0) }
        guard case .processed(let count) = result else { return [] }
        return Array(buffer[..<count])
    }

    @Test func reportsADescriptorWithItsHandlerForTheInterestAsked() throws {
        var loop = try EventLoop<Handler>()
        let pair = try UnixSocket.pair()
        let fd = pair.second.rawValue
        try loop.register(fd, interest: .readable, handler: .socket("b"))
        #expect(loop.interest(of: fd) == .readable)
        #expect(try events(&loop, timeout: 0).isEmpty)

        try sendByte(pair.first)
        #expect(try events(&loop, timeout: 1000) == [.ready(.socket("b"), readable: true, writable: false)])

        try loop.setInterest(.writable, for: fd)
        #expect(loop.interest(of: fd) == .writable)
        #expect(try events(&loop, timeout: 0) == [.ready(.socket("b"), readable: false, writable: true)])

        loop.deregister(fd)
        let registered = loop.isRegistered(fd)
        #expect(!registered)
        #expect(try events(&loop, timeout: 0).isEmpty)
    }

    @Test func doesNotDeliverAReportToARegistrationMadeAfterTheWait() throws {
        var loop = try EventLoop<Handler>()
        let first = try UnixSocket.pair()
        let second = try UnixSocket.pair()
        try loop.register(first.second.rawValue, interest: .readable, handler: .socket("first"))
        try loop.register(second.second.rawValue, interest: .readable, handler: .socket("old"))
        try sendByte(first.first)
        try sendByte(second.first)

        let count = try loop.wait(timeoutMilliseconds: 1000)
        #expect(count == 2)
        // While handling the turn, the second descriptor is closed and its number registered anew: its report from
        // this wait belongs to the old registration and must not reach the new handler.
        loop.deregister(second.second.rawValue)
        try loop.register(second.second.rawValue, interest: .readable, handler: .socket("new"))
        var delivered: [Handler] = []
        for index in 0..<count {
            if case .ready(let handler, _) = loop.event(at: index) { delivered.append(handler) }
        }
        #expect(delivered == [.socket("first")])
        // The next wait reports it to the new registration.
        let next = try events(&loop, timeout: 0)
        #expect(next.contains(.ready(.socket("new"), readable: true, writable: false)))
    }

    @Test func timersFireInDeadlineOrderAndACancelledOneNever() throws {
        var loop = try EventLoop<Handler>()
        let now = SystemClock.monotonicNanoseconds()
        loop.schedule(.timer(3), at: now + 30_000_000)
        let cancelled = loop.schedule(.timer(2), at: now + 20_000_000)
        loop.schedule(.timer(1), at: now + 10_000_000)
        loop.cancel(cancelled)
        #expect(loop.scheduledTimers == 2)
        #expect(loop.nextDeadline == now + 10_000_000)

        var fired: [Seen] = []
        // Each wait without a timeout of its own ends at the earliest timer; the bound only keeps a broken loop
        // from hanging the test.
        for _ in 0..<10 where fired.count < 2 {
            fired += try events(&loop, timeout: 5000)
        }
        #expect(fired == [.timer(.timer(1)), .timer(.timer(3))])
        #expect(SystemClock.monotonicNanoseconds() >= now + 30_000_000)
        #expect(loop.scheduledTimers == 0)
        #expect(loop.nextDeadline == nil)
    }

    @Test func timersDueInTheSameWaitFireTogetherInDeadlineOrder() throws {
        var loop = try EventLoop<Handler>()
        let past = SystemClock.monotonicNanoseconds() - 1_000_000
        loop.schedule(.timer(2), at: past + 2)
        loop.schedule(.timer(1), at: past + 1)
        loop.schedule(.timer(3), at: past + 2)
        #expect(try events(&loop, timeout: 0) == [.timer(.timer(1)), .timer(.timer(2)), .timer(.timer(3))])
    }

    @Test func manyCancelledTimersLeaveOnlyTheLiveOnes() throws {
        var loop = try EventLoop<Handler>()
        let base = SystemClock.monotonicNanoseconds() + 60_000_000_000
        var ids: [TimerID] = []
        for index in 0..<500 { ids.append(loop.schedule(.timer(index), at: base + UInt64(index))) }
        for (index, id) in ids.enumerated() where index % 100 != 7 { loop.cancel(id) }
        #expect(loop.scheduledTimers == 5)
        #expect(loop.nextDeadline == base + 7)
    }

    @Test func aWakerEndsAWaitFromAnotherThread() throws {
        var loop = try EventLoop<Handler>()
        let waker = try loop.makeWaker()
        #expect(try events(&loop, timeout: 0).isEmpty)

        // A thread of its own, not a task: this test blocks its thread in the wait, and on a 2-core machine the
        // other tests' blocking waits can hold every thread of the cooperative pool, so a task might never run.
        var thread = pthread_t()
        let started = pthread_create(
            &thread,
            nil,
            { context in
                let waker = Unmanaged<EventLoop<Handler>.Waker>.fromOpaque(context!).takeRetainedValue()
                SystemClock.sleep(nanoseconds: 50_000_000)
                waker.wake()
                return nil
            },
            Unmanaged.passRetained(waker).toOpaque()
        )
        #expect(started == 0)
        // A wait ends early, with nothing, when a signal interrupts it (other tests' children exit meanwhile): wait
        // again until something is reported, within 10 s.
        var seen: [Seen] = []
        let giveUp = SystemClock.monotonicNanoseconds() + 10_000_000_000
        while started == 0 && seen.isEmpty && SystemClock.monotonicNanoseconds() < giveUp {
            seen = try events(&loop, timeout: 1000)
        }
        if started == 0 { pthread_join(thread, nil) }
        #expect(seen == [.wakeup])
        // Wake-ups before a wait collapse into one event, and it is drained.
        waker.wake()
        waker.wake()
        #expect(try events(&loop, timeout: 0) == [.wakeup])
        #expect(try events(&loop, timeout: 0).isEmpty)
    }

    // The only test in the process that uses SIGURG, whose default action is to be ignored: raise() sends it to this
    // thread, which has it blocked, so it waits on the loop's signalfd and cannot reach another test's thread.
    @Test func deliversASignalAsAnEvent() throws {
        var loop = try EventLoop<Handler>(signals: [SIGURG])
        defer { try? SignalFD.unblock(signals: [SIGURG]) }
        #expect(try events(&loop, timeout: 0).isEmpty)
        #expect(raise(SIGURG) == 0)
        #expect(try events(&loop, timeout: 1000) == [.signal(SIGURG)])
        #expect(try events(&loop, timeout: 0).isEmpty)
    }

    @Test func batchesSendsToSeveralSocketsInOneCall() throws {
        var loop = try EventLoop<Handler>()
        do {
            try loop.enableSendBatching(capacity: 4)
        } catch {
            // No io_uring here (a seccomp filter, or kernel.io_uring_disabled): the daemon sends one by one then.
            return
        }
        let first = try UnixSocket.pair()
        let second = try UnixSocket.pair()
        guard var batcher = loop.sendBatcher.take() else {
            Issue.record("enableSendBatching left no batcher")
            return
        }
        let message: [UInt8] = Array("hello".utf8)
        try message.withUnsafeBytes { bytes in
            batcher.removeAll()
            for fd in [first.first.rawValue, second.first.rawValue] {
                batcher.nextVectors.pointee = iovec(
                    iov_base: UnsafeMutableRawPointer(mutating: bytes.baseAddress),
                    iov_len: bytes.count
                )
                batcher.appendSend(to: fd, ranges: 1, offered: bytes.count)
            }
            try batcher.batch.run()
        }
        #expect(batcher.sendCount == 2)
        for index in 0..<2 {
            #expect(try batcher.batch.result(at: index) == .processed(5))
        }
        #expect(try received(by: first.second) == message)
        #expect(try received(by: second.second) == message)
        loop.sendBatcher = consume batcher
        let kept = loop.sendBatcher?.sendCount
        #expect(kept == 2)
    }
}
#endif
