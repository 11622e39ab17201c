import HeraldHTTP
import Testing

@Suite struct HTTPRequestParserTests {
    private func parse(_ text: String, limits: HTTPRequestParser.Limits = .init()) -> [HTTPRequestParser.Event] {
        var parser = HTTPRequestParser(limits: limits)
        parser.append(Array(text.utf8))
        var events: [HTTPRequestParser.Event] = []
        while true {
            let event = parser.next()
            events.append(event)
            if case .request = event { continue }
            if case .continueExpected = event { continue }
            return events
        }
    }

    private func error(_ text: String, limits: HTTPRequestParser.Limits = .init()) -> HTTPParseError? {
        if case .error(let error) = parse(text, limits: limits).last { return error }
        return nil
    }

    @Test func parsesAGetWithQueryAndKeepsAlive() {
        let events = parse("GET /chat/room?Alice%20Smith HTTP/1.1\r\nHost: x\r\nAccept:  */* \r\n\r\n")
        guard case .request(let request) = events.first else {
            Issue.record("\(events)")
            return
        }
        #expect(request.method == "GET")
        #expect(request.path == "/chat/room")
        #expect(request.query == "Alice%20Smith")
        #expect(request.headers.first("accept") == "*/*")
        #expect(request.keepAlive)
        #expect(events.last == .needMoreData)
    }

    @Test func readsAContentLengthBodyArrivingByteByByteAndPipelinedRequests() {
        let text = "POST /chat/say HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhelloGET / HTTP/1.0\r\n\r\n"
        var parser = HTTPRequestParser()
        var requests: [HTTPRequest] = []
        for byte in text.utf8 {
            parser.append([byte])
            while case .request(let request) = parser.next() { requests.append(request) }
        }
        #expect(requests.count == 2)
        #expect(requests.first?.body == Array("hello".utf8))
        #expect(requests.last?.minorVersion == 0)
        #expect(requests.last?.keepAlive == false)
        #expect(!parser.hasPartialRequest)
    }

    @Test func acceptsBareLineFeedsAndLeadingEmptyLines() {
        guard case .request(let request) = parse("\r\n\nGET /a HTTP/1.1\nHost: x\n\n").first else {
            Issue.record("no request")
            return
        }
        #expect(request.target == "/a")
    }

    @Test func connectionCloseEndsKeepAlive() {
        guard case .request(let request) = parse("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").first else {
            Issue.record("no request")
            return
        }
        #expect(!request.keepAlive)
    }

    @Test(arguments: [
        ("HELLO\r\n\r\n", 400),
        ("GET /\r\n\r\n", 400),
        ("GET / HTTP/1.1 extra\r\nHost: x\r\n\r\n", 400),
        ("GET http://example.com/ HTTP/1.1\r\nHost: x\r\n\r\n", 400),
        ("GET / HTTP/2.0\r\nHost: x\r\n\r\n", 505),
        ("GET / HTTP/1.1\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: x\r\nBad Name: y\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: x\r\nNoColon\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n", 400),
        ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n", 400),
        ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400),
        ("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n", 501),
        ("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n", 400),
        ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 16385\r\n\r\n", 413),
        ("\u{16}\u{03}\u{01}\u{02}\u{00}\u{01}\u{00}\u{01}\u{fc}\u{03}\u{03}\r\n\r\n", 400),
    ])
    func refusesWhatItCannotFrame(text: String, status: Int) {
        let error = error(text)
        #expect(error?.status.code == status, "\(text.debugDescription): \(String(describing: error))")
    }

    @Test func aHeadPastTheLimitIs431EvenBeforeItEnds() {
        var limits = HTTPRequestParser.Limits()
        limits.maximumHeadBytes = 64
        let error = error("GET / HTTP/1.1\r\nHost: x\r\nX: \(String(repeating: "a", count: 100))", limits: limits)
        #expect(error?.status == .headerFieldsTooLarge)
    }

    @Test func staysFailedAfterAnError() {
        var parser = HTTPRequestParser()
        parser.append(Array("BAD\r\n\r\n".utf8))
        guard case .error = parser.next() else {
            Issue.record("no error")
            return
        }
        parser.append(Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
        guard case .error = parser.next() else {
            Issue.record("recovered after an error")
            return
        }
    }

    @Test func expectContinueIsAnsweredBeforeTheBody() {
        var parser = HTTPRequestParser()
        parser.append(
            Array("POST /chat/say HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n".utf8)
        )
        #expect(parser.next() == .continueExpected)
        #expect(parser.next() == .needMoreData)
        #expect(parser.hasPartialRequest)
        parser.append(Array("{}".utf8))
        guard case .request(let request) = parser.next() else {
            Issue.record("no request")
            return
        }
        #expect(request.body == Array("{}".utf8))
    }
}

@Suite struct HTTPResponseTests {
    @Test func encodesAnErrorAsJSONWithContentLengthAndClose() {
        let response = HTTPResponse.error(.methodNotAllowed, reason: "say \"POST\"\n", headers: ["Allow": "POST"])
        let text = String(decoding: response.encoded(keepAlive: false), as: UTF8.self)
        let body = #"{"error":true,"reason":"say \"POST\"\n"}"#
        #expect(
            text
                == "HTTP/1.1 405 Method Not Allowed\r\nAllow: POST\r\nContent-Type: application/json; charset=utf-8\r\n"
                + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)"
        )
    }

    @Test func chunksAreHexSizedAndEmptyInputSendsNothing() {
        #expect(
            ChunkedEncoding.chunk(Array(repeating: 0x61, count: 26)) == Array("1a\r\n".utf8)
                + Array(repeating: 0x61, count: 26) + [13, 10]
        )
        #expect(ChunkedEncoding.chunk([]).isEmpty)
        #expect(ChunkedEncoding.end == Array("0\r\n\r\n".utf8))
    }
}
