#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What Linux's `/proc` says about processes, for a supervisor that must find and end what its children left
/// behind: a process's parent, group, session and start time, its children, and its environment. Elsewhere every
/// answer is empty.
public enum ProcessTable {
    /// One process, from `/proc/PID/stat`.
    public struct Entry: Sendable, Hashable {
        /// Its pid.
        public var pid: Int32
        /// Its parent's pid.
        public var parent: Int32
        /// Its process group.
        public var group: Int32
        /// Its session.
        public var session: Int32
        /// When it started, in clock ticks since boot: with the pid, it names one process for good, as a pid alone
        /// does not once the kernel reuses it.
        public var startTime: UInt64
        /// Whether it has exited and waits for its parent (a zombie).
        public var isZombie: Bool
    }

    /// Now, in the unit of ``Entry/startTime`` (clock ticks since boot): a process started after this call has a
    /// start time at least this. Taken before a fork, it stands for the child's start time without reading the
    /// child's `/proc` entry, which waits while the child is in `execve`.
    public static func startTimeNow() -> UInt64 {
        var time = timespec()
        #if os(Linux)
        _ = clock_gettime(CLOCK_BOOTTIME, &time)
        #else
        _ = clock_gettime(CLOCK_MONOTONIC, &time)
        #endif
        let ticks = UInt64(max(1, sysconf(Int32(_SC_CLK_TCK))))
        let nanoseconds = UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
        return nanoseconds / (1_000_000_000 / ticks)
    }

    /// The entry of `pid`, or nil when there is no such process.
    public static func entry(of pid: Int32) -> Entry? {
        guard let text = read("/proc/\(pid)/stat", limit: 4096) else { return nil }
        // The command name is in parentheses and may hold anything, spaces and ')' included: fields follow the last.
        guard let close = text.lastIndex(of: UInt8(ascii: ")")) else { return nil }
        let fields = text[(close + 1)...].split(separator: UInt8(ascii: " "))
        // After the name: state(0) ppid(1) pgrp(2) session(3) … starttime(19).
        guard fields.count > 19, let parent = Int32(text: fields[1]), let group = Int32(text: fields[2]),
            let session = Int32(text: fields[3]), let start = UInt64(text: fields[19])
        else { return nil }
        let state = fields[0].first ?? 0
        return Entry(
            pid: pid,
            parent: parent,
            group: group,
            session: session,
            startTime: start,
            isZombie: state == UInt8(ascii: "Z") || state == UInt8(ascii: "X")
        )
    }

    /// The children of `pid` (every thread's), from `/proc/PID/task/*/children`.
    public static func children(of pid: Int32) -> [Int32] {
        guard let directory = opendir("/proc/\(pid)/task") else { return [] }
        defer { closedir(directory) }
        var children: [Int32] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { bytes in
                String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard Int32(name) != nil, let text = read("/proc/\(pid)/task/\(name)/children", limit: 1 << 20) else {
                continue
            }
            children += text.split(separator: UInt8(ascii: " ")).compactMap { Int32(text: $0) }
        }
        return children
    }

    /// `pid` and every descendant of it, parents before their children; each listed once.
    public static func tree(of pid: Int32) -> [Int32] {
        var found: [Int32] = [pid]
        var seen: Set<Int32> = [pid]
        var index = 0
        while index < found.count {
            for child in children(of: found[index]) where seen.insert(child).inserted {
                found.append(child)
            }
            index += 1
        }
        return found
    }

    /// The pid of every process, from the numeric entries of `/proc`.
    public static func allPIDs() -> [Int32] {
        guard let directory = opendir("/proc") else { return [] }
        defer { closedir(directory) }
        var pids: [Int32] = []
        while let entry = readdir(directory) {
            let pid = withUnsafeBytes(of: entry.pointee.d_name) { bytes in
                Int32(text: bytes.prefix { $0 != 0 })
            }
            if let pid { pids.append(pid) }
        }
        return pids
    }

    /// The value of `key` in the environment `pid` was started with (`/proc/PID/environ`), or nil when it has none
    /// or the file cannot be read (another user's process).
    public static func environmentValue(of pid: Int32, _ key: String) -> String? {
        guard let bytes = read("/proc/\(pid)/environ", limit: 1 << 20) else { return nil }
        let prefix = Array((key + "=").utf8)
        for entry in bytes.split(separator: 0) where entry.starts(with: prefix) {
            return String(decoding: entry.dropFirst(prefix.count), as: UTF8.self)
        }
        return nil
    }

    private static func read(_ path: String, limit: Int) -> [UInt8]? {
        let raw = open(path, O_RDONLY | O_CLOEXEC)
        guard raw >= 0 else { return nil }
        let file = FileDescriptor(owning: raw)
        var bytes: [UInt8] = []
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 1)
        defer { buffer.deallocate() }
        while bytes.count < limit {
            guard case .processed(let count)? = try? file.read(into: buffer), count > 0 else { break }
            bytes.append(contentsOf: buffer[0..<count])
        }
        return bytes
    }
}

extension FixedWidthInteger {
    /// The decimal number in `text` (ASCII digits, maybe a trailing newline), or nil.
    fileprivate init?(text: some Collection<UInt8>) {
        var value: Self = 0
        var digits = 0
        for byte in text {
            if byte == UInt8(ascii: "\n") { break }
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
            let (shifted, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = shifted.addingReportingOverflow(Self(byte - UInt8(ascii: "0")))
            guard !overflow1 && !overflow2 else { return nil }
            value = sum
            digits += 1
        }
        guard digits > 0 else { return nil }
        self = value
    }
}
