import HeraldWire
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

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
        /// Whether to reconnect by itself when the daemon goes away (it died, or restarted), with backoff from
        /// 50 ms up to 2 s, re-subscribing every live subscription; each stream then gets a `herald.reconnected`
        /// notice, since posts made while it was down were missed. While disconnected, requests fail at once with
        /// ``HeraldError/Code/disconnected``. With `false`, streams end when the connection does. On by default.
        public var reconnects: Bool
        /// A last will: what the daemon posts if this connection ends without a goodbye (the process crashed or was
        /// killed), after the will's delay. Registered on connect and on every reconnect.
        public var will: Will?
        /// The threads that read this connection together with others (``ReaderGroup``); nil, the default, gives the
        /// connection a reader thread of its own.
        public var readerGroup: ReaderGroup?
        /// The refused posts nobody awaited, counted across reconnections; a fresh one per ``Herald/connect``.
        var refusals = RefusalLedger()

        /// Creates options.
        ///
        /// - Parameters:
        ///   - clientName: the `HELLO` label; defaults to the process name.
        ///   - requestTimeout: the longest wait for an answer; 10 seconds by default.
        ///   - logger: where to log, or nil for silence.
        ///   - reconnects: whether to reconnect by itself; on by default.
        ///   - will: the last will, or nil for none.
        ///   - readerGroup: the threads that read this connection with others, or nil for a thread of its own.
        public init(
            clientName: String = Options.defaultClientName,
            requestTimeout: Duration = .seconds(10),
            logger: Logger? = nil,
            reconnects: Bool = true,
            will: Will? = nil,
            readerGroup: ReaderGroup? = nil
        ) {
            self.clientName = clientName
            self.requestTimeout = requestTimeout
            self.logger = logger
            self.reconnects = reconnects
            self.will = will
            self.readerGroup = readerGroup
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

extension Herald {
    /// A last will (wire.md, `WILL`): posted by the daemon for a connection that ends without saying goodbye.
    ///
    /// A chat client killed by the OOM killer still shows as gone: its will posts "gone" for it.
    public struct Will: Sendable, Hashable {
        /// The name to post to.
        public var name: String
        /// The payload, usually a JSON object.
        public var payload: [UInt8]
        /// Also set (or, with an empty payload, clear) the name's retained value.
        public var retain: Bool
        /// How long the daemon waits after the connection ends before posting; at most an hour.
        public var delay: Duration

        /// Creates a will with raw bytes as payload.
        public init(name: String, payload: [UInt8], retain: Bool = false, delay: Duration = .zero) {
            self.name = name
            self.payload = payload
            self.retain = retain
            self.delay = delay
        }

        /// Creates a will whose payload is `userInfo` as a JSON object.
        public init(name: String, userInfo: [String: JSONValue], retain: Bool = false, delay: Duration = .zero) {
            self.init(name: name, payload: JSONValue.encodeObject(userInfo), retain: retain, delay: delay)
        }

        /// The `WILL` frame for request `id`.
        func frame(request id: UInt32) -> Frame {
            let parts = delay.components
            let milliseconds = max(0, parts.seconds * 1000 + parts.attoseconds / 1_000_000_000_000_000)
            return .will(
                Frame.Will(
                    request: id,
                    delayMilliseconds: UInt32(clamping: min(milliseconds, Int64(Limits.maxWillDelayMilliseconds))),
                    name: name,
                    payload: payload,
                    retain: retain
                )
            )
        }
    }
}
