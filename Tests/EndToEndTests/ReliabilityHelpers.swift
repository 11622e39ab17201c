import Foundation
import HeraldLaunch
import HeraldPosix
import HeraldTestSupport
import HeraldWire

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
