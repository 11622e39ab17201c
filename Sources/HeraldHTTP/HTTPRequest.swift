/// One complete HTTP/1.x request: its head and its `Content-Length` body.
public struct HTTPRequest: Hashable, Sendable {
    /// The method, e.g. "GET"; case-sensitive, as RFC 9110 says.
    public var method: String
    /// The request target as sent, in origin form: "/chat/room?alice".
    public var target: String
    /// The minor version: 1 for HTTP/1.1, 0 for HTTP/1.0.
    public var minorVersion: Int
    /// The header fields.
    public var headers: HTTPHeaders
    /// The body; empty without `Content-Length`.
    public var body: [UInt8]

    /// Creates a request; the parser does this.
    public init(method: String, target: String, minorVersion: Int = 1, headers: HTTPHeaders = [:], body: [UInt8] = []) {
        self.method = method
        self.target = target
        self.minorVersion = minorVersion
        self.headers = headers
        self.body = body
    }

    /// The target's path, without the query: "/chat/room".
    public var path: String {
        String(target.prefix { $0 != "?" })
    }

    /// The target's query, the text after the first "?", or nil when there is none: "alice".
    public var query: String? {
        guard let mark = target.firstIndex(of: "?") else {
            return nil
        }
        return String(target[target.index(after: mark)...])
    }

    /// Whether the client wants the connection kept open after the response: HTTP/1.1 unless it says
    /// `Connection: close`; HTTP/1.0 only when it says `Connection: keep-alive`.
    public var keepAlive: Bool {
        let tokens = headers["Connection"].flatMap { $0.split(separator: ",") }.map {
            $0.trimmingWhitespace().lowercased()
        }
        if minorVersion >= 1 {
            return !tokens.contains("close")
        }
        return tokens.contains("keep-alive")
    }
}

extension Substring {
    /// Without leading and trailing spaces and tabs (HTTP's optional whitespace).
    func trimmingWhitespace() -> Substring {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let start = firstIndex(where: { !isSpace($0) }) else {
            return ""
        }
        let end = lastIndex(where: { !isSpace($0) })!
        return self[start...end]
    }
}
