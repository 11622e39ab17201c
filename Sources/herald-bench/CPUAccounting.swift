import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// CPU time readings for the result's `*_cpu_pct` fields and the noise fields, as bench.c and cpuload.h take them.
enum CPUAccounting {
    /// Seconds of CPU (user + system) process `pid` has used, from `/proc/PID/stat`; nil if it cannot be read.
    static func processSeconds(_ pid: Int32) -> Double? {
        guard pid > 0, let fields = statFields(pid), fields.count > 12,
            let user = Double(fields[11]), let system = Double(fields[12])
        else { return nil }
        return (user + system) / ticksPerSecond
    }

    /// Seconds of CPU used so far by every process except `excluded`, children's time included, so that the
    /// difference between two readings stays right when a process exits in between (cpuload.h's `others_cpu_s`).
    static func othersSeconds(excluding excluded: Set<Int32>) -> Double {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return -1 }
        var ticks = 0.0
        for entry in entries {
            guard let pid = Int32(entry), pid > 0, !excluded.contains(pid), let fields = statFields(pid),
                fields.count > 14
            else { continue }
            for index in 11...14 { ticks += Double(fields[index]) ?? 0 }
        }
        return ticks / ticksPerSecond
    }

    /// Seconds the hypervisor gave our CPUs to other guests (`steal` in `/proc/stat`).
    static func stealSeconds() -> Double {
        guard let text = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
            let line = text.split(separator: "\n").first
        else { return -1 }
        let fields = line.split(separator: " ")
        guard fields.count > 8, let steal = Double(fields[8]) else { return -1 }
        return steal / ticksPerSecond
    }

    /// CPU nanoseconds of this whole process (every thread).
    static func processNanoseconds() -> UInt64 { clockNanoseconds(CLOCK_PROCESS_CPUTIME_ID) }

    /// CPU nanoseconds of the calling thread.
    static func threadNanoseconds() -> UInt64 { clockNanoseconds(CLOCK_THREAD_CPUTIME_ID) }

    private static let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))

    private static func clockNanoseconds(_ clock: clockid_t) -> UInt64 {
        var time = timespec()
        clock_gettime(clock, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }

    /// The fields of `/proc/PID/stat` after the command name (which may hold spaces): state is field 0, utime 11.
    private static func statFields(_ pid: Int32) -> [Substring]? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return nil }
        return text[text.index(after: close)...].split(separator: " ")
    }
}
