import Foundation
import HeraldPosix
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `FileDescriptor.waitForInput(orFrom:timeoutMilliseconds:)`: what wakes it, and what does not.
@Suite struct WaitForInputTests {
    @Test func answersAtOnceWhenInputIsThereAndTimesOutWhenNot() throws {
        let pair = try UnixSocket.pair()
        #expect(try pair.first.waitForInput(orFrom: -1, timeoutMilliseconds: 0) == (false, false))
        _ = try [UInt8(1)].withUnsafeBytes { try pair.second.send($0) }
        #expect(try pair.first.waitForInput(orFrom: -1, timeoutMilliseconds: 0) == (true, false))
        #expect(try pair.first.waitForInput(orFrom: -1, timeoutMilliseconds: -1) == (true, false))
    }

    @Test func reportsTheOtherDescriptorAndEndOfFileAsInput() throws {
        let pair = try UnixSocket.pair()
        let other = try UnixSocket.pair()
        _ = try [UInt8(1)].withUnsafeBytes { try other.second.send($0) }
        #expect(try pair.first.waitForInput(orFrom: other.first.rawValue, timeoutMilliseconds: -1) == (false, true))
        // The peer gone: a read answers at once (0, end of file), so the wait says so.
        let pair2 = try UnixSocket.pair()
        pair2.second.close()
        #expect(try pair2.first.waitForInput(orFrom: -1, timeoutMilliseconds: -1).this)
    }

    #if os(Linux)
    /// Why the Herald reader waits in `poll` rather than a blocking `read`: on a Unix stream socket, every waiter is
    /// woken when the peer frees what this end wrote (the write-space wake-up), and a blocking reader wakes, finds
    /// nothing and sleeps again; `poll` for input is not woken by it. Counted as the waiting thread's voluntary
    /// context switches while the peer reads 500 writes one by one.
    @Test func isNotWokenWhenThePeerReadsWhatThisEndWrote() throws {
        let waiting = try Self.wakeUps { descriptor in
            _ = try? descriptor.waitForInput(orFrom: -1, timeoutMilliseconds: -1)
        }
        // The control, so the count is known to see wake-ups: a blocking read is woken by each of them.
        let reading = try Self.wakeUps { descriptor in
            var byte: UInt8 = 0
            _ = try? withUnsafeMutableBytes(of: &byte) { try descriptor.read(into: $0) }
        }
        #expect(waiting < 50, "waitForInput was woken \(waiting) times")
        #expect(reading > 250, "a blocking read was woken only \(reading) times: the control does not see wake-ups")
    }

    /// How often a thread doing `wait` on one end of a socket pair is woken while this thread writes 500 messages to
    /// that end and reads each from the other end; `wait` returns once the end gets a byte at the close.
    private static func wakeUps(while wait: @escaping @Sendable (borrowing FileDescriptor) -> Void) throws -> Int {
        let pair = try UnixSocket.pair()
        let end = pair.first.rawValue
        let taskPath = Mutex<String?>(nil)
        let started = DispatchSemaphore(value: 0)
        let finished = DispatchSemaphore(value: 0)
        let thread = Thread {
            var link = [CChar](repeating: 0, count: 256)
            let length = readlink("/proc/thread-self", &link, link.count - 1)
            taskPath.withLock {
                $0 = length > 0 ? String(decoding: link[..<length].map { UInt8($0) }, as: UTF8.self) : ""
            }
            started.signal()
            // A second descriptor for the same socket: the same wait queue, owned by this thread.
            let descriptor = FileDescriptor(owning: dup(end))
            wait(descriptor)
            finished.signal()
        }
        thread.start()
        started.wait()
        let path = try #require(taskPath.withLock { $0 }.flatMap { $0.isEmpty ? nil : "/proc/\($0)" })
        try Self.waitUntilSleeping(path)
        let before = try Self.voluntarySwitches(path)
        let message = [UInt8](repeating: 7, count: 64)
        var received = [UInt8](repeating: 0, count: 64)
        for _ in 0..<500 {
            _ = try message.withUnsafeBytes { try pair.first.send($0) }
            _ = try received.withUnsafeMutableBytes { try pair.second.read(into: $0) }
            // A thread woken and not yet run is not woken again: let it sleep again first, so each read counts.
            try Self.waitUntilSleeping(path)
        }
        let after = try Self.voluntarySwitches(path)
        _ = try [UInt8(1)].withUnsafeBytes { try pair.second.send($0) }
        #expect(finished.wait(timeout: .now() + 10) == .success, "the waiting thread did not end")
        pair.second.close()
        return after - before
    }

    /// Waits (bounded) until the thread at `path` is asleep, so the count starts from its wait.
    private static func waitUntilSleeping(_ path: String) throws {
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            let stat = try String(contentsOfFile: "\(path)/stat", encoding: .utf8)
            // The state follows the command name, which is in parentheses.
            if let close = stat.lastIndex(of: ")"), stat[stat.index(close, offsetBy: 2)] == "S" { return }
            sched_yield()
        }
        Issue.record("the waiting thread never went to sleep")
    }

    private static func voluntarySwitches(_ path: String) throws -> Int {
        let status = try String(contentsOfFile: "\(path)/status", encoding: .utf8)
        let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("voluntary_ctxt_switches:") })
        return try #require(Int(line.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)))
    }
    #endif
}
