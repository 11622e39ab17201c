import Herald
import HeraldHTTP
import Testing

@testable import HeraldDashboard

@Suite struct RouteTests {
    let policy = AccessPolicy(token: "t", port: 9000)

    private func route(_ method: String, _ target: String, body: String = "", accept: String? = nil) -> Route {
        var headers: HTTPHeaders = ["Host": "127.0.0.1:9000", "Origin": "http://127.0.0.1:9000"]
        if let accept { headers.add(name: "Accept", value: accept) }
        return Route(
            HTTPRequest(method: method, target: target, headers: headers, body: Array(body.utf8)),
            policy: policy
        )
    }

    private func refusal(_ route: Route) -> Int? {
        if case .refuse(let response) = route { return response.status.code }
        return nil
    }

    @Test func routesThePageTheStreamAndTheActions() {
        #expect(route("GET", "/?token=t") == .page(selected: nil))
        #expect(route("GET", "/?token=t&name=a.b") == .page(selected: "a.b"))
        #expect(route("HEAD", "/?token=t") == .page(selected: nil))
        #expect(route("GET", "/events?token=t&after=12&name=x") == .events(after: 12, selected: "x"))
        #expect(
            route(
                "POST",
                "/post?token=t",
                body: "name=a.b&payload=%7B%22k%22%3A+1%7D&retain=on",
                accept: "application/json"
            )
                == .post(name: "a.b", payload: Array("{\"k\":1}".utf8), retain: true, wantsJSON: true)
        )
        #expect(
            route("POST", "/post?token=t", body: "name=a.b")
                == .post(name: "a.b", payload: Array("{}".utf8), retain: false, wantsJSON: false)
        )
        #expect(
            route("POST", "/plugin?token=t", body: "name=bt&action=stop")
                == .plugin(.stop, name: "bt", wantsJSON: false)
        )
    }

    @Test func refusesBadPostsAndPluginRequestsBeforeDoingAnything() {
        #expect(refusal(route("POST", "/post?token=t", body: "name=a..b")) == 400)
        #expect(refusal(route("POST", "/post?token=t", body: "name=herald.x")) == 400, "reserved names")
        #expect(refusal(route("POST", "/post?token=t", body: "name=a&payload=%5B1%5D")) == 400, "not an object")
        #expect(refusal(route("POST", "/post?token=t", body: "name=a&payload=%7Bnope")) == 400)
        #expect(refusal(route("POST", "/plugin?token=t", body: "name=bt&action=reload")) == 400)
        #expect(refusal(route("POST", "/plugin?token=t", body: "name=a.b&action=stop")) == 400)
        #expect(refusal(route("POST", "/plugin?token=t", body: "action=stop")) == 400)
    }

    @Test func unknownPathsAndMethodsAreRefusedAndTheTokenComesFirst() {
        #expect(refusal(route("GET", "/secret?token=t")) == 404)
        #expect(refusal(route("GET", "/post?token=t")) == 405)
        #expect(refusal(route("POST", "/?token=t")) == 405)
        #expect(refusal(route("GET", "/secret")) == 403)
        #expect(refusal(route("POST", "/post", body: "name=a")) == 403)
    }

    @Test func formFieldsDecodePlusAndPercentAndKeepMalformedEscapes() {
        let fields = FormFields(query: "a=1+2&b=%41%zz&c&=x&d=%E2%9C%93")
        #expect(fields["a"] == "1 2")
        #expect(fields["b"] == "A%zz")
        #expect(fields["c"] == "")
        #expect(fields["d"] == "✓")
    }
}
