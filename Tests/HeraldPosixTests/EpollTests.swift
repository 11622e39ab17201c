#if os(Linux)
import HeraldPosix
import Testing

@Suite struct EpollTests {
    private func wait(_ epoll: inout Epoll, timeout: Int32) throws -> [Epoll.Event] {
        var events = [Epoll.Event](repeating: Epoll.Event(), count: 8)
        let count = try events.withUnsafeMutableBufferPointer { try epoll.wait(into: $0, timeoutMilliseconds: timeout) }
        return Array(events[..<count])
    }

    @Test func reportsASocketReadableWithItsDataWord() throws {
        var epoll = try Epoll()
        let pair = try UnixSocket.pair()
        try epoll.add(pair.second.rawValue, events: .readable, data: 42)
        #expect(try wait(&epoll, timeout: 0).isEmpty)

        let byte: [UInt8] = [7]
        _ = try byte.withUnsafeBytes { try pair.first.send($0) }
        let events = try wait(&epoll, timeout: 1000)
        #expect(events.count == 1)
        #expect(events.first?.data == 42)
        #expect(events.first?.events.contains(.readable) == true)
    }

    @Test func modifyAndRemoveChangeWhatIsReported() throws {
        var epoll = try Epoll()
        let pair = try UnixSocket.pair()
        try epoll.add(pair.first.rawValue, events: .readable, data: 1)
        #expect(try wait(&epoll, timeout: 0).isEmpty)
        try epoll.modify(pair.first.rawValue, events: [.readable, .writable], data: 2)
        #expect(try wait(&epoll, timeout: 0) == [Epoll.Event(events: .writable, data: 2)])
        try epoll.remove(pair.first.rawValue)
        #expect(try wait(&epoll, timeout: 0).isEmpty)
        let error = #expect(throws: SystemError.self) { try epoll.remove(pair.first.rawValue) }
        #expect(error?.errno == .noEntry)
    }

    @Test func reportsReadHangupWhenThePeerCloses() throws {
        var epoll = try Epoll()
        let pair = try UnixSocket.pair()
        let first = pair.first
        let second = pair.second
        try epoll.add(second.rawValue, events: [.readable, .readHangup], data: 5)
        first.close()
        let events = try wait(&epoll, timeout: 1000)
        #expect(events.first?.events.contains(.readHangup) == true)
    }

    @Test func eventFDWakesAWaitFromAnotherThread() async throws {
        final class Shared: Sendable {
            let wakeup: EventFD
            init() throws { wakeup = try EventFD() }
        }
        let shared = try Shared()
        var epoll = try Epoll()
        try epoll.add(shared.wakeup.rawValue, events: .readable, data: 99)
        #expect(try wait(&epoll, timeout: 0).isEmpty)

        try await Task.detached {
            try shared.wakeup.signal()
            try shared.wakeup.signal()
        }.value
        let events = try wait(&epoll, timeout: 5000)
        #expect(events == [Epoll.Event(events: .readable, data: 99)])
        #expect(try shared.wakeup.drain() == 2)
        #expect(try wait(&epoll, timeout: 0).isEmpty)
        #expect(try shared.wakeup.drain() == 0)
    }

    /// A wait with nothing registered returns no events once its timeout has passed. A signal may end one wait
    /// early with none (EINTR is reported as zero events, for the caller's loop to wait again; this test process
    /// gets SIGCHLD from the daemons other tests stop), so the test waits again for what is left, as a loop does.
    @Test func waitTimesOutWithNoEvents() throws {
        var epoll = try Epoll()
        let start = SystemClock.monotonicNanoseconds()
        var waits = 0
        while SystemClock.monotonicNanoseconds() - start < 30_000_000 {
            let left = 30 - Int32((SystemClock.monotonicNanoseconds() - start) / 1_000_000)
            #expect(try wait(&epoll, timeout: max(1, left)).isEmpty)
            waits += 1
            // A wait that ignored its timeout would come back at once, a hundred times within the 30 ms.
            try #require(waits < 100, "epoll_wait keeps returning early")
        }
    }
}
#endif
