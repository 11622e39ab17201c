public import HeraldHTTP

/// Who may use the dashboard: the holder of its token, through 127.0.0.1 or localhost at its port, and for a
/// request that changes something, from the dashboard's own page.
///
/// - The token, given as `?token=` (as Jupyter prints it), is required for everything: without it nothing is served,
///   so another user of the machine, who can reach 127.0.0.1 too, sees nothing.
/// - `Host` must name the dashboard itself: a page elsewhere that rebinds its DNS name to 127.0.0.1 (DNS rebinding)
///   sends its own name there.
/// - A `POST` must carry an `Origin` of the dashboard itself: a page elsewhere cannot make the browser send the right
///   one, and a browser always sends one with a `POST`.
public struct AccessPolicy: Sendable {
    /// What a request may do.
    public enum Decision: Sendable, Equatable {
        case allowed
        /// Answer 403 with this reason, and do nothing.
        case forbidden(String)
    }

    /// The secret the URL carries.
    public let token: String
    /// The port the dashboard listens on.
    public let port: UInt16

    /// A policy for the dashboard at `port` with `token`.
    public init(token: String, port: UInt16) {
        self.token = token
        self.port = port
    }

    /// The hosts a request may name: the address the dashboard listens on and `localhost`, each with the port.
    public var allowedHosts: [String] { ["127.0.0.1:\(port)", "localhost:\(port)"] }

    /// The origins a changing request may come from.
    public var allowedOrigins: [String] { allowedHosts.map { "http://" + $0 } }

    /// Decides on a request: host first, then token, then, for anything but GET and HEAD, its origin.
    public func decide(_ request: HTTPRequest) -> Decision {
        let hosts = request.headers["Host"]
        guard hosts.count == 1, allowedHosts.contains(hosts[0].lowercased()) else {
            return .forbidden("the Host header must be one of \(allowedHosts.joined(separator: ", "))")
        }
        guard let given = FormFields(query: request.query ?? "")["token"], Self.equalInConstantTime(given, token)
        else {
            return .forbidden("a valid token is required: use the URL herald dashboard printed")
        }
        if request.method == "GET" || request.method == "HEAD" {
            return .allowed
        }
        let origins = request.headers["Origin"]
        guard origins.count == 1, allowedOrigins.contains(origins[0].lowercased()) else {
            return .forbidden("a \(request.method) must come from the dashboard's own page (its Origin header)")
        }
        return .allowed
    }

    /// Compares without stopping at the first difference, so the time taken tells nothing of how much matched.
    static func equalInConstantTime(_ lhs: String, _ rhs: String) -> Bool {
        let left = Array(lhs.utf8)
        let right = Array(rhs.utf8)
        var difference = UInt8(truncatingIfNeeded: left.count ^ right.count)
        for index in 0..<max(left.count, right.count) {
            let a = index < left.count ? left[index] : 0
            let b = index < right.count ? right[index] : 0
            difference |= a ^ b
        }
        return difference == 0 && left.count == right.count
    }

    /// A new random token: 32 hex digits (128 bits) from the system's generator.
    public static func makeToken() -> String {
        var generator = SystemRandomNumberGenerator()
        let hex = Array("0123456789abcdef")
        return String((0..<32).map { _ in hex[Int(generator.next() % 16)] })
    }
}
