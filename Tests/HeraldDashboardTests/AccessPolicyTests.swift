import HeraldHTTP
import Testing

@testable import HeraldDashboard

@Suite struct AccessPolicyTests {
    let policy = AccessPolicy(token: "secret", port: 8123)

    private func request(
        _ method: String = "GET",
        _ target: String = "/?token=secret",
        host: String? = "127.0.0.1:8123",
        origin: String? = nil
    ) -> HTTPRequest {
        var headers = HTTPHeaders()
        if let host { headers.add(name: "Host", value: host) }
        if let origin { headers.add(name: "Origin", value: origin) }
        return HTTPRequest(method: method, target: target, headers: headers)
    }

    @Test func theTokenOpensEverythingForTheDashboardsOwnHost() {
        #expect(policy.decide(request()) == .allowed)
        #expect(policy.decide(request(host: "localhost:8123")) == .allowed)
        #expect(policy.decide(request(host: "LOCALHOST:8123")) == .allowed)
        #expect(policy.decide(request("GET", "/events?after=3&token=secret")) == .allowed)
    }

    @Test(arguments: ["/", "/?token=", "/?token=secre", "/?token=secrets", "/?token=SECRET", "/?tok=secret"])
    func withoutTheRightTokenNothingIsServed(target: String) {
        guard case .forbidden = policy.decide(request("GET", target)) else {
            Issue.record("\(target) was allowed")
            return
        }
    }

    @Test(arguments: [nil, "evil.example:8123", "127.0.0.1", "127.0.0.1:80", "localhost", "[::1]:8123"])
    func aForeignHostIsRefusedEvenWithTheToken(host: String?) {
        guard case .forbidden(let reason) = policy.decide(request(host: host)) else {
            Issue.record("Host \(host ?? "none") was allowed")
            return
        }
        #expect(reason.contains("Host"))
    }

    @Test func twoHostHeadersAreRefused() {
        var twice = request()
        twice.headers.add(name: "Host", value: "evil.example")
        #expect(policy.decide(twice) != .allowed)
    }

    @Test(arguments: [nil, "http://evil.example", "null", "http://127.0.0.1:8124", "https://127.0.0.1:8123"])
    func aPostFromAnotherOriginIsRefused(origin: String?) {
        guard case .forbidden(let reason) = policy.decide(request("POST", "/post?token=secret", origin: origin)) else {
            Issue.record("a POST from \(origin ?? "no origin") was allowed")
            return
        }
        #expect(reason.contains("Origin"))
    }

    @Test func aPostFromThePageItselfIsAllowed() {
        #expect(policy.decide(request("POST", "/post?token=secret", origin: "http://127.0.0.1:8123")) == .allowed)
        #expect(
            policy.decide(
                request("POST", "/plugin?token=secret", host: "localhost:8123", origin: "http://localhost:8123")
            )
                == .allowed
        )
    }

    @Test func tokensAreRandomHexOf128Bits() {
        let tokens = Set((0..<50).map { _ in AccessPolicy.makeToken() })
        #expect(tokens.count == 50)
        #expect(tokens.allSatisfy { $0.count == 32 && $0.allSatisfy(\.isHexDigit) })
    }
}
