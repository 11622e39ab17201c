import HeraldWire

/// A complete response: status, fields and body, sent with `Content-Length`.
public struct HTTPResponse: Hashable, Sendable {
    /// The status.
    public var status: HTTPStatus
    /// The fields; `Content-Length` and `Connection` are added when it is encoded.
    public var headers: HTTPHeaders
    /// The body.
    public var body: [UInt8]

    /// Creates a response.
    public init(status: HTTPStatus, headers: HTTPHeaders = [:], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A `text/plain` response, e.g. 200 "OK".
    public static func text(_ text: String, status: HTTPStatus = .ok) -> HTTPResponse {
        HTTPResponse(status: status, headers: ["Content-Type": "text/plain; charset=utf-8"], body: Array(text.utf8))
    }

    /// An error in the shape the book's server (Vapor) uses: `{"error":true,"reason":"..."}`.
    ///
    /// - Parameters:
    ///   - status: the status; its phrase is the reason when `reason` is nil.
    ///   - reason: what went wrong.
    ///   - headers: extra fields, e.g. `Allow` for a 405.
    public static func error(_ status: HTTPStatus, reason: String? = nil, headers: HTTPHeaders = [:]) -> HTTPResponse {
        var all = headers
        all.add(name: "Content-Type", value: "application/json; charset=utf-8")
        let body = "{\"error\":true,\"reason\":\(JSONString.quoted(reason ?? status.reason))}"
        return HTTPResponse(status: status, headers: all, body: Array(body.utf8))
    }

    /// The bytes on the wire.
    ///
    /// - Parameter keepAlive: whether the connection stays open; false adds `Connection: close`.
    public func encoded(keepAlive: Bool) -> [UInt8] {
        var head = HTTPResponseHead(status: status, headers: headers)
        head.headers.replaceOrAdd(name: "Content-Length", value: "\(body.count)")
        if !keepAlive {
            head.headers.replaceOrAdd(name: "Connection", value: "close")
        }
        return head.encoded() + body
    }
}

/// The status line and fields of a response, on their own: the start of a streamed (chunked) response.
public struct HTTPResponseHead: Hashable, Sendable {
    /// The status.
    public var status: HTTPStatus
    /// The fields, sent as they are.
    public var headers: HTTPHeaders

    /// Creates a head.
    public init(status: HTTPStatus, headers: HTTPHeaders = [:]) {
        self.status = status
        self.headers = headers
    }

    /// A 200 head for a body sent as chunks of `contentType` that may never end.
    public static func chunked(contentType: String) -> HTTPResponseHead {
        HTTPResponseHead(status: .ok, headers: ["Content-Type": contentType, "Transfer-Encoding": "chunked"])
    }

    /// The status line, the fields and the empty line.
    public func encoded() -> [UInt8] {
        var text = "HTTP/1.1 \(status.code) \(status.reason)\r\n"
        for (name, value) in headers {
            text += "\(name): \(value)\r\n"
        }
        text += "\r\n"
        return Array(text.utf8)
    }
}

/// The chunked transfer coding (RFC 9112 section 7.1).
public enum ChunkedEncoding {
    /// `bytes` as one chunk: the size in hex, CRLF, the bytes, CRLF. Empty input gives nothing, since an empty chunk
    /// would end the body.
    public static func chunk(_ bytes: [UInt8]) -> [UInt8] {
        guard !bytes.isEmpty else {
            return []
        }
        return Array("\(String(bytes.count, radix: 16))\r\n".utf8) + bytes + [0x0D, 0x0A]
    }

    /// The last chunk and the empty trailer: the end of a chunked body.
    public static let end: [UInt8] = Array("0\r\n\r\n".utf8)
}
