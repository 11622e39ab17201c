import HeraldWire

/// Why a Herald operation failed: a ``Code`` to branch on and a message for people.
///
/// The message says what failed and why, including the system's errno text when a system call failed, e.g.
/// "no heraldd is listening on /tmp/herald-1000/socket: No such file or directory (errno 2); start it with 'heraldd'
/// or 'systemctl --user start heraldd.socket'".
public struct HeraldError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of failure.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Value: Hashable, Sendable {
            case daemonUnavailable
            case invalidName
            case invalidPattern
            case reservedName
            case payloadTooLarge
            case timedOut
            case disconnected
            case protocolError
            case daemonError
            case io
            case cancelled
            case encodingFailed
            case tooManySubscriptions
            case refused
        }

        private let value: Value

        private init(_ value: Value) {
            self.value = value
        }

        /// No daemon accepts connections on the socket path (it is not running, or the path is wrong).
        public static let daemonUnavailable = Code(.daemonUnavailable)
        /// A name outside the grammar of wire.md; checked before anything is sent.
        public static let invalidName = Code(.invalidName)
        /// A pattern outside the grammar of wire.md; checked before anything is sent.
        public static let invalidPattern = Code(.invalidPattern)
        /// A post to a name under the reserved `herald.` prefix; checked before anything is sent.
        public static let reservedName = Code(.reservedName)
        /// A payload larger than the daemon's `maxPayload`; checked before anything is sent.
        public static let payloadTooLarge = Code(.payloadTooLarge)
        /// The daemon did not answer, or did not read, within ``Herald/Options/requestTimeout``.
        public static let timedOut = Code(.timedOut)
        /// The connection is gone: the daemon closed it or is shutting down, or this process closed it.
        public static let disconnected = Code(.disconnected)
        /// The daemon sent bytes that break Protocols/wire.md; the connection was closed.
        public static let protocolError = Code(.protocolError)
        /// The daemon sent an `ERROR` frame; its wire code is in ``HeraldError/wireCode``. The connection is closed.
        public static let daemonError = Code(.daemonError)
        /// A system call on the socket failed; the message has the errno text.
        public static let io = Code(.io)
        /// The task waiting for the daemon's answer was cancelled; the request was withdrawn.
        public static let cancelled = Code(.cancelled)
        /// A typed message could not be encoded as JSON.
        public static let encodingFailed = Code(.encodingFailed)

        /// The connection already holds as many subscriptions as the daemon allows (`maxSubscriptions` of
        /// `WELCOME`); checked before anything is sent.
        public static let tooManySubscriptions = Code(.tooManySubscriptions)
        /// The daemon refused this one request (a version 2 daemon: a bound, a name its rules refuse, an unknown
        /// plugin); its wire code is in ``HeraldError/wireCode``. Unlike ``daemonError``, the connection and its
        /// other subscriptions go on.
        public static let refused = Code(.refused)

        /// The code's name, e.g. `daemonUnavailable`.
        public var description: String {
            "\(value)"
        }
    }

    /// The kind of failure.
    public var code: Code
    /// What failed and why, for people.
    public var message: String
    /// For ``Code/daemonError`` (and a daemon that is shutting down), the code of the daemon's `ERROR` frame as
    /// numbered in Protocols/wire.md; nil otherwise.
    public var wireCode: UInt16?

    /// Creates an error.
    ///
    /// - Parameters:
    ///   - code: the kind of failure.
    ///   - message: what failed and why.
    ///   - wireCode: the code of the daemon's `ERROR` frame, if one caused this.
    public init(_ code: Code, _ message: String, wireCode: UInt16? = nil) {
        self.code = code
        self.message = message
        self.wireCode = wireCode
    }

    /// The message.
    public var description: String {
        message
    }

    /// The name Protocols/wire.md gives a wire code, e.g. `TOO_MANY_RETAINED` for 18; `ERROR_n` for a code it does
    /// not define.
    public static func wireCodeName(_ code: UInt16) -> String {
        WireError.Code(rawValue: code).description
    }
}
