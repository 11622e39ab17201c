import HeraldPosix

extension Herald {
    /// Where the library logs: a level and a closure that receives each message at that level or above.
    ///
    /// A library never prints on its own, so ``Options/logger`` is nil by default. An app hands its own logging in
    /// with ``init(level:_:)``, or takes ``standardError(label:level:)``, which writes the lines Herald's own
    /// executables write. Messages below ``level`` are never built.
    public struct Logger: Sendable {
        /// How important a message is, from ``debug`` (least) to ``error`` (most); `"\(level)"` is its name.
        public enum Level: Int, Sendable, Hashable, Comparable, CaseIterable {
            /// Detail for diagnosing a problem: each subscription made live, each unsubscription.
            case debug
            /// Routine events: a lost connection, a reconnection.
            case info
            /// Significant but normal events.
            case notice
            /// Something went wrong but the library carries on.
            case warning
            /// An operation failed: the daemon broke the protocol.
            case error

            /// Orders levels by importance.
            public static func < (lhs: Level, rhs: Level) -> Bool {
                lhs.rawValue < rhs.rawValue
            }
        }

        /// The least important level handed to the closure.
        public let level: Level
        private let handler: @Sendable (Level, String) -> Void

        /// Creates a logger that hands each message at `level` or above to `handler`.
        ///
        /// The handler may be called on any thread, the connection's reader thread included, so it should return
        /// quickly.
        ///
        /// - Parameters:
        ///   - level: the least important level to log.
        ///   - handler: receives the level and the message, without a trailing newline.
        public init(level: Level = .info, _ handler: @escaping @Sendable (_ level: Level, _ message: String) -> Void) {
            self.level = level
            self.handler = handler
        }

        /// A logger that writes one line per message to standard error, `label: level: message`, with a single
        /// write(2) so lines from several threads do not interleave; under systemd, journald adds the time.
        ///
        /// - Parameters:
        ///   - label: the prefix of every line, usually the program's name.
        ///   - level: the least important level to write.
        public static func standardError(label: String, level: Level = .info) -> Logger {
            // The executables' logger: the same line format whether the daemon or the library wrote it.
            let lines = HeraldPosix.Logger(label: label, level: HeraldPosix.Logger.Level(rawValue: level.rawValue)!)
            return Logger(level: level) { level, message in
                lines.log(HeraldPosix.Logger.Level(rawValue: level.rawValue)!, message)
            }
        }

        /// Hands `message` to the closure at `level`, if enabled; the message is only built then.
        func log(_ level: Level, _ message: @autoclosure () -> String) {
            guard level >= self.level else { return }
            handler(level, message())
        }

        // The levels the library logs at.
        func debug(_ message: @autoclosure () -> String) { log(.debug, message()) }
        func info(_ message: @autoclosure () -> String) { log(.info, message()) }
        func error(_ message: @autoclosure () -> String) { log(.error, message()) }
    }
}
