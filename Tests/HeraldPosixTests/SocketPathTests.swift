import HeraldPosix
import Testing

@Suite struct SocketPathTests {
    struct Case: Sendable, CustomTestStringConvertible {
        let explicit: String?
        let environment: [String: String]
        let expected: String
        var testDescription: String {
            "explicit \(explicit ?? "nil"), environment \(environment) → \(expected)"
        }
    }

    static let cases: [Case] = [
        Case(
            explicit: "/x/s",
            environment: ["HERALD_SOCKET": "/h/s", "XDG_RUNTIME_DIR": "/run/user/7"],
            expected: "/x/s"
        ),
        Case(explicit: "", environment: ["HERALD_SOCKET": "/h/s"], expected: "/h/s"),
        Case(
            explicit: nil,
            environment: ["HERALD_SOCKET": "/h/s", "XDG_RUNTIME_DIR": "/run/user/7"],
            expected: "/h/s"
        ),
        Case(
            explicit: nil,
            environment: ["HERALD_SOCKET": "", "XDG_RUNTIME_DIR": "/run/user/7"],
            expected: "/run/user/7/herald/socket"
        ),
        Case(explicit: nil, environment: ["XDG_RUNTIME_DIR": ""], expected: "/tmp/herald-1000/socket"),
        Case(explicit: nil, environment: [:], expected: "/tmp/herald-1000/socket"),
    ]

    @Test(arguments: cases)
    func resolvesByPrecedence(_ testCase: Case) {
        #expect(
            SocketPath.resolve(explicit: testCase.explicit, environment: testCase.environment, uid: 1000)
                == testCase.expected
        )
    }

    @Test func explicitPathWinsOverTheRealEnvironment() {
        #expect(SocketPath.resolve(explicit: "/given/socket") == "/given/socket")
    }
}
