import Foundation
import HeraldLaunch
import HeraldPosix
import HeraldTestSupport

/// `herald dashboard` started as a real process against a test daemon, and a raw HTTP client that sends exactly the
/// headers a test gives it (Host and Origin included, which URLSession will not let a caller set).
struct DashboardProcess {
    let process: ChildProcess
    /// The URL it printed, with the token.
    let url: String
    let port: UInt16
    let token: String

    static func start(_ daemon: TestDaemon, arguments: [String] = []) async throws -> DashboardProcess {
        let process = try ChildProcess(
            TestBinaries.path("herald"),
            ["dashboard", "--socket", daemon.socketPath] + arguments,
            environment: daemon.environment
        )
        let line = try await process.waitForStdoutLine(containing: "http://", timeout: .seconds(60))
        guard let start = line.range(of: "http://") else { throw TestFailure("no URL in \(line)") }
        let url = String(line[start.lowerBound...]).trimmingCharacters(in: .whitespaces)
        guard let components = URLComponents(string: url), let port = components.port,
            let token = components.queryItems?.first(where: { $0.name == "token" })?.value
        else { throw TestFailure("cannot read the port and token of \(url)") }
        return DashboardProcess(process: process, url: url, port: UInt16(port), token: token)
    }

    /// Sends one request on a new connection and returns the status code and the body (read until the server
    /// closes: every request says `Connection: close`). The blocking socket work runs on a thread of its own
    /// (`blocking`), never on the cooperative pool a thousand parallel tests share.
    func request(
        _ method: String,
        _ target: String,
        host: String? = nil,
        headers: [String: String] = [:],
        body: String = ""
    ) async throws -> (status: Int, body: String) {
        let port = port
        return try await blocking {
            try Self.request(port: port, method, target, host: host, headers: headers, body: body)
        }
    }

    private static func request(
        port: UInt16,
        _ method: String,
        _ target: String,
        host: String?,
        headers: [String: String],
        body: String
    ) throws -> (status: Int, body: String) {
        let socket = try TCPSocket.connect(host: "127.0.0.1", port: port)
        try socket.setReceiveTimeout(seconds: 20)
        var text = "\(method) \(target) HTTP/1.1\r\nHost: \(host ?? "127.0.0.1:\(port)")\r\nConnection: close\r\n"
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        if method == "POST" {
            text += "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: \(body.utf8.count)\r\n"
        }
        text += "\r\n" + body
        try Array(text.utf8).withUnsafeBytes { try socket.writeAll($0) }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let result = try buffer.withUnsafeMutableBytes { try socket.read(into: $0) }
            guard case .processed(let count) = result, count > 0 else { break }
            received += buffer[..<count]
        }
        let response = String(decoding: received, as: UTF8.self)
        let statusLine = response.prefix { $0 != "\r" }.split(separator: " ")
        guard statusLine.count > 1, let status = Int(statusLine[1]) else {
            throw TestFailure("not an HTTP response: \(response.prefix(200).debugDescription)")
        }
        let body = response.range(of: "\r\n\r\n").map { String(response[$0.upperBound...]) } ?? ""
        return (status, body)
    }
}
