/// A violation of Protocols/wire.md, with the code the daemon puts in an `ERROR` frame.
///
/// The decoder, the name and pattern checks and the broker all report failures as a `WireError`, so
/// the reason a peer reads is the same text a test asserts on.
public struct WireError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The error codes of wire.md, in its numbering.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public var rawValue: UInt16

        public init(rawValue: UInt16) {
            self.rawValue = rawValue
        }

        public static let malformedFrame = Code(rawValue: 1)
        public static let frameTooLarge = Code(rawValue: 2)
        public static let unknownFrameType = Code(rawValue: 3)
        public static let unsupportedVersion = Code(rawValue: 4)
        public static let helloRequired = Code(rawValue: 5)
        public static let unexpectedHello = Code(rawValue: 6)
        public static let invalidName = Code(rawValue: 7)
        public static let invalidPattern = Code(rawValue: 8)
        public static let payloadTooLarge = Code(rawValue: 9)
        public static let tooManySubscriptions = Code(rawValue: 10)
        public static let duplicateSubscription = Code(rawValue: 11)
        public static let unknownSubscription = Code(rawValue: 12)
        public static let reservedName = Code(rawValue: 13)
        public static let permissionDenied = Code(rawValue: 14)
        public static let invalidFlags = Code(rawValue: 15)
        public static let shuttingDown = Code(rawValue: 16)
        public static let invalidRequest = Code(rawValue: 17)
        public static let tooManyRetained = Code(rawValue: 18)
        public static let tooManyConnections = Code(rawValue: 19)
        public static let slowConsumer = Code(rawValue: 20)
        public static let tooManyRetainedBytes = Code(rawValue: 21)
        public static let tooManyWills = Code(rawValue: 22)
        public static let patternTooComplex = Code(rawValue: 23)
        public static let tooManyNames = Code(rawValue: 24)
        public static let helloTimeout = Code(rawValue: 25)
        public static let unknownPlugin = Code(rawValue: 26)

        /// Whether, in version 2, an `ERROR` with this code answering a request is a refusal that leaves the
        /// connection as it was, rather than final (wire.md, "Refusals and fatal errors").
        ///
        /// `PERMISSION_DENIED` is a refusal when it answers a request; on accept it answers none and is final.
        public var isRefusal: Bool {
            switch self {
            case .invalidName, .invalidPattern, .payloadTooLarge, .reservedName, .tooManySubscriptions,
                .duplicateSubscription, .unknownSubscription, .patternTooComplex, .tooManyRetained,
                .tooManyRetainedBytes, .tooManyWills, .tooManyNames, .permissionDenied, .unknownPlugin:
                true
            default: false
            }
        }

        /// Every code wire.md defines, in its numbering.
        public static let all: [Code] = (1...26).map { Code(rawValue: $0) }

        /// The code's name as wire.md spells it, e.g. `INVALID_NAME`.
        public var description: String {
            switch self {
            case .malformedFrame: "MALFORMED_FRAME"
            case .frameTooLarge: "FRAME_TOO_LARGE"
            case .unknownFrameType: "UNKNOWN_FRAME_TYPE"
            case .unsupportedVersion: "UNSUPPORTED_VERSION"
            case .helloRequired: "HELLO_REQUIRED"
            case .unexpectedHello: "UNEXPECTED_HELLO"
            case .invalidName: "INVALID_NAME"
            case .invalidPattern: "INVALID_PATTERN"
            case .payloadTooLarge: "PAYLOAD_TOO_LARGE"
            case .tooManySubscriptions: "TOO_MANY_SUBSCRIPTIONS"
            case .duplicateSubscription: "DUPLICATE_SUBSCRIPTION"
            case .unknownSubscription: "UNKNOWN_SUBSCRIPTION"
            case .reservedName: "RESERVED_NAME"
            case .permissionDenied: "PERMISSION_DENIED"
            case .invalidFlags: "INVALID_FLAGS"
            case .shuttingDown: "SHUTTING_DOWN"
            case .invalidRequest: "INVALID_REQUEST"
            case .tooManyRetained: "TOO_MANY_RETAINED"
            case .tooManyConnections: "TOO_MANY_CONNECTIONS"
            case .slowConsumer: "SLOW_CONSUMER"
            case .tooManyRetainedBytes: "TOO_MANY_RETAINED_BYTES"
            case .tooManyWills: "TOO_MANY_WILLS"
            case .patternTooComplex: "PATTERN_TOO_COMPLEX"
            case .tooManyNames: "TOO_MANY_NAMES"
            case .helloTimeout: "HELLO_TIMEOUT"
            case .unknownPlugin: "UNKNOWN_PLUGIN"
            default: "ERROR_\(rawValue)"
            }
        }
    }

    /// What kind of violation this is.
    public var code: Code
    /// Text for people: what was wrong, naming the offending value where that helps.
    public var reason: String
    /// The request or subscription the error answers, or 0 when it is not tied to one.
    public var request: UInt32
    /// Version 2: this `ERROR` is a refusal (its `REFUSAL` flag): it answers one request and the connection goes on.
    public var isRefusal: Bool

    /// Creates an error.
    public init(_ code: Code, _ reason: String, request: UInt32 = 0, isRefusal: Bool = false) {
        self.code = code
        self.reason = reason
        self.request = request
        self.isRefusal = isRefusal
    }

    public var description: String {
        "\(code): \(reason)"
    }
}
