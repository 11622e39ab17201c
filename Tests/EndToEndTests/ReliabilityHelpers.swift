import Foundation
import HeraldLaunch
import HeraldPosix
import HeraldTestSupport
import HeraldWire
import Synchronization

/// What the reliability tests read about a live daemon process from /proc.
enum DaemonProbe {
    /// Resident memory in bytes (VmRSS).
    static func residentBytes(of pid: Int32) throws -> Int {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
            let kilobytes = Int(line.split(separator: " ", omittingEmptySubsequences: true)[1])
        else { throw TestFailure("no VmRSS for pid \(pid)") }
        return kilobytes * 1024
    }

    /// Open descriptors.
    static func descriptorCount(of pid: Int32) throws -> Int {
        try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count
    }

    /// CPU time used so far (user + system), in seconds.
    static func cpuSeconds(of pid: Int32) throws -> Double {
        let stat = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
        // Fields after the command name, which is in parentheses and may hold spaces.
        let fields = stat[stat.index(after: stat.lastIndex(of: ")")!)...].split(separator: " ")
        let ticks = Double(fields[11])! + Double(fields[12])!
        return ticks / Double(sysconf(Int32(_SC_CLK_TCK)))
    }
}

/// Runs blocking socket work on a thread of its own, off Swift's cooperative pool: on a 2-core machine the pool has
/// two threads, and a test blocking one in read(2) for seconds starves every other test's continuations.
///
/// Not on `DispatchQueue.global()` either: libdispatch gives that queue about as many threads as cores, and two
/// tests blocked there for seconds delayed everything else queued on it, such as `ChildProcess`'s report of a
/// child's exit (seen as daemons "still running after 10 seconds" that had logged "stopped").
func blocking<Value: Sendable>(_ body: @escaping @Sendable () throws -> Value) async throws -> Value {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread {
            continuation.resume(with: Result { try body() })
        }
        thread.name = "test-blocking"
        thread.start()
    }
}

/// Blocking work started on a thread of its own at once, for work that must overlap what the test does next (a
/// measurement during a flood). `Task { try await blocking { … } }` would start it only once a pool thread is free
/// to run the task, which a parallel run on two cores can delay past the event being measured.
final class StartedThread<Value: Sendable>: Sendable {
    private enum State {
        case running
        case waiting(CheckedContinuation<Value, any Error>)
        case finished(Result<Value, any Error>)
    }

    private let state = Mutex(State.running)

    /// Starts `body` now, on a new thread.
    init(_ body: @escaping @Sendable () throws -> Value) {
        let thread = Thread { [self] in
            let result = Result { try body() }
            let waiter = state.withLock { state -> CheckedContinuation<Value, any Error>? in
                defer { state = .finished(result) }
                if case .waiting(let continuation) = state { return continuation }
                return nil
            }
            waiter?.resume(with: result)
        }
        thread.name = "test-blocking"
        thread.start()
    }

    /// What `body` returned or threw, once it has.
    var value: Value {
        get async throws {
            try await withCheckedThrowingContinuation { continuation in
                let result = state.withLock { state -> Result<Value, any Error>? in
                    if case .finished(let result) = state { return result }
                    state = .waiting(continuation)
                    return nil
                }
                if let result { continuation.resume(with: result) }
            }
        }
    }
}
