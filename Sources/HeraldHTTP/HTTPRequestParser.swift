/// A request that cannot be parsed or accepted: the status to answer with and why. The connection is closed after
/// the answer, because the next request's start can no longer be found.
public struct HTTPParseError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The status to answer with: 400, 413, 431, 501 or 505.
    public var status: HTTPStatus
    /// What was wrong, for the JSON error body.
    public var reason: String

    /// Creates an error.
    public init(_ status: HTTPStatus, _ reason: String) {
        self.status = status
        self.reason = reason
    }

    /// "400 Bad Request: the request line is malformed".
    public var description: String {
        "\(status): \(reason)"
    }
}

/// An incremental HTTP/1.x request parser, as a state machine with no I/O.
///
/// Feed it bytes as they arrive with ``append(_:)`` and take requests out with ``next()`` until it answers
/// ``Event/needMoreData``. It is strict where leniency has caused request smuggling and hangs:
/// - only origin-form targets ("/path?query"), only HTTP/1.0 and HTTP/1.1, and HTTP/1.1 requires `Host`;
/// - header names are tokens, values have no control characters, obsolete line folding is refused;
/// - bodies are framed by `Content-Length` alone: `Transfer-Encoding` (chunked uploads) is answered 501, and a
///   request with both, or with conflicting lengths, 400;
/// - the head is at most ``Limits/maximumHeadBytes`` (else 431) and the body ``Limits/maximumBodyBytes`` (else 413,
///   decided from `Content-Length` before any of the body is read).
///
/// Lines may end in CRLF or, as RFC 9112 permits a recipient to accept, a bare LF. Empty lines before a request line
/// are skipped. After an error the parser stays failed: the connection must be closed.
public struct HTTPRequestParser {
    /// The parser's limits.
    public struct Limits: Sendable {
        /// The longest request head (request line and fields, with their line ends).
        public var maximumHeadBytes = 8 * 1024
        /// The most header fields.
        public var maximumHeaderCount = 100
        /// The longest body.
        public var maximumBodyBytes = 16 * 1024

        /// 8 KiB of head in at most 100 fields; a 16 KiB body.
        public init() {}
    }

    /// What the bytes so far amount to.
    public enum Event: Hashable, Sendable {
        /// A complete request.
        case request(HTTPRequest)
        /// The head of a request with `Expect: 100-continue` is complete and its body is acceptable: answer
        /// `100 Continue` so the client sends it. The request itself follows once its body has arrived.
        case continueExpected
        /// Nothing complete yet.
        case needMoreData
        /// The request is unacceptable; answer with the error and close.
        case error(HTTPParseError)
    }

    private enum State {
        case head
        case body(HTTPRequest, length: Int)
        case failed(HTTPParseError)
    }

    /// The limits in force.
    public let limits: Limits
    private var state = State.head
    private var buffer: [UInt8] = []
    /// Where the unconsumed bytes start in `buffer`.
    private var start = 0
    /// How far the search for the end of the head has got, so that a slow client costs linear time, not quadratic.
    private var scanned = 0

    /// Creates a parser waiting for a request.
    public init(limits: Limits = Limits()) {
        self.limits = limits
    }

    /// Whether part of a request has arrived and the rest has not: what a read timeout should act on.
    public var hasPartialRequest: Bool {
        switch state {
        case .head: buffer.count > start
        case .body: true
        case .failed: false
        }
    }

    /// Adds bytes received from the connection.
    public mutating func append(_ bytes: some Collection<UInt8>) {
        if start > 0, start >= buffer.count / 2 {
            buffer.removeFirst(start)
            scanned -= start
            start = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// The next event the buffered bytes allow.
    public mutating func next() -> Event {
        switch state {
        case .failed(let error):
            return .error(error)
        case .body(var request, let length):
            guard buffer.count - start >= length else {
                return .needMoreData
            }
            request.body = Array(buffer[start..<start + length])
            consume(length)
            state = .head
            return .request(request)
        case .head:
            return parseHead()
        }
    }

    private mutating func consume(_ count: Int) {
        start += count
        scanned = start
    }

    private mutating func fail(_ status: HTTPStatus, _ reason: String) -> Event {
        let error = HTTPParseError(status, reason)
        state = .failed(error)
        return .error(error)
    }

    private mutating func parseHead() -> Event {
        // Empty lines before a request are allowed (RFC 9112 section 2.2).
        while start < buffer.count, buffer[start] == 0x0D || buffer[start] == 0x0A {
            if buffer[start] == 0x0D, start + 1 >= buffer.count {
                return .needMoreData
            }
            if buffer[start] == 0x0D, buffer[start + 1] != 0x0A {
                return fail(.badRequest, "a line ends in a bare CR")
            }
            consume(buffer[start] == 0x0D ? 2 : 1)
        }
        guard let end = findEndOfHead() else {
            if buffer.count - start > limits.maximumHeadBytes {
                return fail(.headerFieldsTooLarge, "the request head is longer than \(limits.maximumHeadBytes) bytes")
            }
            return .needMoreData
        }
        if end - start > limits.maximumHeadBytes {
            return fail(.headerFieldsTooLarge, "the request head is longer than \(limits.maximumHeadBytes) bytes")
        }
        let head = buffer[start..<end]
        consume(end - start)
        var lines: [ArraySlice<UInt8>] = []
        var lineStart = head.startIndex
        for index in head.indices where head[index] == 0x0A {
            var line = head[lineStart..<index]
            if line.last == 0x0D {
                line = line.dropLast()
            }
            lines.append(line)
            lineStart = index + 1
        }
        // The head ends with an empty line.
        lines.removeLast()
        do throws(HTTPParseError) {
            var request = try parseRequestLine(lines[0])
            request.headers = try parseFields(lines.dropFirst())
            return try frame(request)
        } catch {
            state = .failed(error)
            return .error(error)
        }
    }

    /// The index just past the empty line that ends the head, or nil.
    private mutating func findEndOfHead() -> Int? {
        var index = max(scanned, start)
        while index < buffer.count {
            if buffer[index] == 0x0A {
                // An LF followed by LF or CRLF ends the head.
                if index + 1 < buffer.count, buffer[index + 1] == 0x0A {
                    return index + 2
                }
                if index + 2 < buffer.count, buffer[index + 1] == 0x0D, buffer[index + 2] == 0x0A {
                    return index + 3
                }
                if index + 2 >= buffer.count {
                    // Cannot tell yet; look here again when more arrives.
                    scanned = index
                    return nil
                }
            }
            index += 1
        }
        scanned = index
        return nil
    }

    private func parseRequestLine(_ line: ArraySlice<UInt8>) throws(HTTPParseError) -> HTTPRequest {
        if line.contains(where: { $0 < 0x20 || $0 == 0x7F }) {
            throw HTTPParseError(.badRequest, "the request line contains a control character")
        }
        let parts = line.split(separator: 0x20, omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, !parts[1].isEmpty else {
            throw HTTPParseError(.badRequest, "the request line is not 'METHOD TARGET HTTP/1.1'")
        }
        guard parts[0].allSatisfy(Self.isTokenByte) else {
            throw HTTPParseError(.badRequest, "the method is not a token")
        }
        let version = String(decoding: parts[2], as: UTF8.self)
        let minor: Int
        switch version {
        case "HTTP/1.1": minor = 1
        case "HTTP/1.0": minor = 0
        default:
            if version.hasPrefix("HTTP/"), version.count == 8 {
                throw HTTPParseError(.versionNotSupported, "\(version) is not supported; use HTTP/1.1")
            }
            throw HTTPParseError(.badRequest, "the request line is not 'METHOD TARGET HTTP/1.1'")
        }
        guard parts[1].first == UInt8(ascii: "/"), parts[1].allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw HTTPParseError(.badRequest, "the target must be a path starting with '/'")
        }
        return HTTPRequest(
            method: String(decoding: parts[0], as: UTF8.self),
            target: String(decoding: parts[1], as: UTF8.self),
            minorVersion: minor
        )
    }

    private func parseFields(_ lines: ArraySlice<ArraySlice<UInt8>>) throws(HTTPParseError) -> HTTPHeaders {
        if lines.count > limits.maximumHeaderCount {
            throw HTTPParseError(.headerFieldsTooLarge, "the request has more than \(limits.maximumHeaderCount) fields")
        }
        var headers = HTTPHeaders()
        for line in lines {
            if line.first == 0x20 || line.first == 0x09 {
                throw HTTPParseError(.badRequest, "obsolete line folding is not accepted")
            }
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else {
                throw HTTPParseError(.badRequest, "a header line has no ':'")
            }
            let name = line[line.startIndex..<colon]
            guard !name.isEmpty, name.allSatisfy(Self.isTokenByte) else {
                throw HTTPParseError(.badRequest, "a header name is not a token")
            }
            let value = line[(colon + 1)...]
            if value.contains(where: { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F }) {
                throw HTTPParseError(.badRequest, "a header value contains a control character")
            }
            headers.add(
                name: String(decoding: name, as: UTF8.self),
                value: String(String(decoding: value, as: UTF8.self)[...].trimmingWhitespace())
            )
        }
        return headers
    }

    /// Decides how the body is framed and whether it is acceptable.
    private mutating func frame(_ request: HTTPRequest) throws(HTTPParseError) -> Event {
        if request.minorVersion == 1, request.headers["Host"].count != 1 {
            throw HTTPParseError(.badRequest, "an HTTP/1.1 request needs exactly one Host field")
        }
        let lengths = request.headers["Content-Length"].flatMap { $0.split(separator: ",") }.map {
            $0.trimmingWhitespace()
        }
        if !request.headers["Transfer-Encoding"].isEmpty {
            if !lengths.isEmpty {
                throw HTTPParseError(.badRequest, "a request may not have both Transfer-Encoding and Content-Length")
            }
            throw HTTPParseError(.notImplemented, "request bodies must be sent with Content-Length, not chunked")
        }
        guard let first = lengths.first else {
            return .request(request)
        }
        guard lengths.allSatisfy({ $0 == first }), !first.isEmpty, first.count <= 18,
            first.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let length = Int(first)
        else {
            throw HTTPParseError(.badRequest, "the Content-Length is not a number")
        }
        if length > limits.maximumBodyBytes {
            throw HTTPParseError(.payloadTooLarge, "the body is longer than \(limits.maximumBodyBytes) bytes")
        }
        state = .body(request, length: length)
        let expects = request.headers["Expect"].contains { $0.lowercased() == "100-continue" }
        if expects, length > 0, request.minorVersion == 1, buffer.count - start < length {
            return .continueExpected
        }
        return next()
    }

    /// tchar of RFC 9110: visible ASCII except delimiters.
    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        default:
            Array("!#$%&'*+-.^_`|~".utf8).contains(byte)
        }
    }
}
