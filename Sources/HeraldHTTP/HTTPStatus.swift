/// An HTTP status code and its reason phrase.
public struct HTTPStatus: Hashable, Sendable, CustomStringConvertible {
    /// The three-digit code.
    public var code: Int
    /// The reason phrase sent after it.
    public var reason: String

    /// Creates a status; prefer the named constants.
    public init(code: Int, reason: String) {
        self.code = code
        self.reason = reason
    }

    /// "404 Not Found".
    public var description: String {
        "\(code) \(reason)"
    }

    public static let `continue` = HTTPStatus(code: 100, reason: "Continue")
    public static let ok = HTTPStatus(code: 200, reason: "OK")
    public static let accepted = HTTPStatus(code: 202, reason: "Accepted")
    public static let seeOther = HTTPStatus(code: 303, reason: "See Other")
    public static let badRequest = HTTPStatus(code: 400, reason: "Bad Request")
    public static let forbidden = HTTPStatus(code: 403, reason: "Forbidden")
    public static let notFound = HTTPStatus(code: 404, reason: "Not Found")
    public static let methodNotAllowed = HTTPStatus(code: 405, reason: "Method Not Allowed")
    public static let requestTimeout = HTTPStatus(code: 408, reason: "Request Timeout")
    public static let lengthRequired = HTTPStatus(code: 411, reason: "Length Required")
    public static let payloadTooLarge = HTTPStatus(code: 413, reason: "Payload Too Large")
    public static let headerFieldsTooLarge = HTTPStatus(code: 431, reason: "Request Header Fields Too Large")
    public static let internalServerError = HTTPStatus(code: 500, reason: "Internal Server Error")
    public static let notImplemented = HTTPStatus(code: 501, reason: "Not Implemented")
    public static let serviceUnavailable = HTTPStatus(code: 503, reason: "Service Unavailable")
    public static let versionNotSupported = HTTPStatus(code: 505, reason: "HTTP Version Not Supported")
}
