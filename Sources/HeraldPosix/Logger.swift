#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A minimal logger that writes one line per message to standard error.
///
/// Each line is "label: level: message" written with a single write(2), so lines from several threads or processes
/// sharing the stream do not interleave. There is no timestamp: under systemd, journald adds it.
///
/// Libraries take an optional logger and default to ``disabled``; only executables create enabled ones.
public struct Logger: Sendable {
    /// How important a message is. Ordered from ``debug`` (least) to ``error`` (most).
    public enum Level: Int, Comparable, Sendable, CaseIterable, CustomStringConvertible {
        /// Detail for diagnosing a problem.
        case debug
        /// Routine events.
        case info
        /// Significant but normal events, such as startup and shutdown.
        case notice
        /// Something went wrong but the program carries on.
        case warning
        /// An operation failed.
        case error

        /// Parses a level name, case-insensitively: "debug", "info", "notice", "warning" (or "warn"), "error".
        ///
        /// - Returns: nil for anything else.
        public init?(parsing text: String) {
            switch text.lowercased() {
            case "debug": self = .debug
            case "info": self = .info
            case "notice": self = .notice
            case "warning", "warn": self = .warning
            case "error": self = .error
            default: return nil
            }
        }

        /// The level's name as it appears in a log line, e.g. "warning".
        public var description: String {
            switch self {
            case .debug: "debug"
            case .info: "info"
            case .notice: "notice"
            case .warning: "warning"
            case .error: "error"
            }
        }

        /// Orders levels by importance.
        public static func < (lhs: Level, rhs: Level) -> Bool {
            lhs.rawValue < rhs.rawValue
        }
    }

    /// The prefix of every line, usually the program's name.
    public let label: String
    /// The least important level that is written; nil when the logger is disabled.
    public let level: Level?
    /// Where lines go: standard error, except in tests.
    let descriptor: Int32

    /// Creates a logger that writes messages at `level` and above.
    ///
    /// - Parameters:
    ///   - label: the prefix of every line, e.g. "heraldd".
    ///   - level: the least important level to write.
    public init(label: String, level: Level) {
        self.init(label: label, level: level, descriptor: STDERR_FILENO)
    }

    /// Creates a logger that writes to `descriptor` instead of standard error; for tests.
    init(label: String, level: Level?, descriptor: Int32) {
        self.label = label
        self.level = level
        self.descriptor = descriptor
    }

    /// A logger that writes nothing and never evaluates its messages.
    public static let disabled = Logger(label: "", level: nil, descriptor: STDERR_FILENO)

    /// Whether a message at `level` would be written.
    public func isEnabled(_ level: Level) -> Bool {
        guard let minimum = self.level else {
            return false
        }
        return level >= minimum
    }

    /// Writes `message` at `level`, if enabled; the message is only evaluated then.
    public func log(_ level: Level, _ message: @autoclosure () -> String) {
        guard isEnabled(level) else {
            return
        }
        var line = "\(label): \(level): \(message())\n"
        line.withUTF8 { bytes in
            Self.writeLine(UnsafeRawBufferPointer(bytes), to: descriptor)
        }
    }

    /// Writes `message` at ``Level/debug``, if enabled.
    public func debug(_ message: @autoclosure () -> String) {
        log(.debug, message())
    }

    /// Writes `message` at ``Level/info``, if enabled.
    public func info(_ message: @autoclosure () -> String) {
        log(.info, message())
    }

    /// Writes `message` at ``Level/notice``, if enabled.
    public func notice(_ message: @autoclosure () -> String) {
        log(.notice, message())
    }

    /// Writes `message` at ``Level/warning``, if enabled.
    public func warning(_ message: @autoclosure () -> String) {
        log(.warning, message())
    }

    /// Writes `message` at ``Level/error``, if enabled.
    public func error(_ message: @autoclosure () -> String) {
        log(.error, message())
    }

    /// Writes the whole line with as few write(2) calls as the kernel allows: one, unless it takes a partial write.
    /// Failures are ignored: there is nowhere left to report them.
    private static func writeLine(_ bytes: UnsafeRawBufferPointer, to descriptor: Int32) {
        var remaining = bytes
        while !remaining.isEmpty {
            // Not FileDescriptor.write: that would trap on EBADF when stderr is closed, and logging must not crash.
            let written = write(descriptor, remaining.baseAddress, remaining.count)
            if written < 0 {
                if Errno.current == .interrupted {
                    continue
                }
                return
            }
            remaining = UnsafeRawBufferPointer(rebasing: remaining[written...])
        }
    }
}
