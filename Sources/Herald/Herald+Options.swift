import Foundation
public import HeraldPosix
import HeraldWire

extension Herald {
    /// How a ``Herald`` connection behaves.
    public struct Options: Sendable {
        /// The label sent in `HELLO`, shown in the daemon's logs and status; at most 64 bytes of UTF-8 (a longer one
        /// is cut at a character boundary). Defaults to the process name.
        public var clientName: String
        /// The longest wait for any answer from the daemon (`WELCOME`, `ACK`, `STATUS_REPORT`) and for the daemon to
        /// read what is written to it; past it the operation throws ``HeraldError/Code/timedOut``, never hangs.
        public var requestTimeout: Duration
        /// Where the library logs; nil, the default, logs nothing: a library never prints on its own.
        public var logger: Logger?

        /// Creates options.
        ///
        /// - Parameters:
        ///   - clientName: the `HELLO` label; defaults to the process name.
        ///   - requestTimeout: the longest wait for an answer; 10 seconds by default.
        ///   - logger: where to log, or nil for silence.
        public init(
            clientName: String = Options.defaultClientName,
            requestTimeout: Duration = .seconds(10),
            logger: Logger? = nil
        ) {
            self.clientName = clientName
            self.requestTimeout = requestTimeout
            self.logger = logger
        }

        /// The process name, the default ``clientName``.
        public static var defaultClientName: String {
            ProcessInfo.processInfo.processName
        }

        /// ``clientName`` cut to the protocol's 64 bytes at a character boundary.
        var clientLabel: String {
            var label = ""
            for character in clientName {
                if label.utf8.count + character.utf8.count > Limits.maxClientLabelBytes { break }
                label.append(character)
            }
            return label
        }
    }
}
