import Foundation
import HeraldLaunch
import HeraldPosix
import HeraldTestSupport

/// The real built herald-chat-server on a free port.
final class ChatServerProcess: Sendable {
    let process: ChildProcess
    let port: UInt16

    /// Starts the server and waits until it listens.
    ///
    /// - Parameter launcher: a command that runs the server as its last arguments, e.g. `["/usr/bin/prlimit",
    ///   "--nofile=64:64"]`, which execs it in place (the pid stays the server's).
    static func start(
        _ arguments: [String] = [],
        port: UInt16 = 0,
        launcher: [String] = []
    ) async throws -> ChatServerProcess {
        let command = launcher + [TestBinaries.path("herald-chat-server"), "--port", "\(port)", "--log-level", "info"]
        let process = try ChildProcess(command[0], Array(command.dropFirst()) + arguments)
        let line = try await process.waitForStderrLine(containing: "listening on http://")
        // "http://127.0.0.1:PORT" or "http://[::]:PORT".
        let after = line.components(separatedBy: "http://").last?.split(separator: " ").first ?? ""
        let digits = after.split(separator: ":").last?.prefix { $0.isNumber } ?? ""
        guard let port = UInt16(digits) else {
            throw ChatTestError(description: "no port in '\(line)'")
        }
        return ChatServerProcess(process: process, port: port)
    }

    private init(process: ChildProcess, port: UInt16) {
        self.process = process
        self.port = port
    }

    var url: String { "http://127.0.0.1:\(port)" }

    deinit { process.signal(SIGKILL) }
}

/// A raw TCP connection to the server, read with a receive timeout, as Blabber's client (or an attacker) would.
struct RawHTTP: ~Copyable {
    let socket: FileDescriptor
    var received: [UInt8] = []

    init(port: UInt16, host: String = "127.0.0.1") throws {
        let connected = try TCPSocket.connect(host: host, port: port)
        try connected.setReceiveTimeout(seconds: 5)
        socket = connected
    }

    func send(_ text: String) throws {
        try Array(text.utf8).withUnsafeBytes { try socket.writeAll($0) }
    }

    /// Reads until `condition` holds for everything received, the peer closes, or 5 s pass without data.
    @discardableResult
    mutating func read(until condition: (String) -> Bool) throws -> String {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while !condition(text) {
            let result = try buffer.withUnsafeMutableBytes { try socket.read(into: $0) }
            guard case .processed(let count) = result, count > 0 else { break }
            received += buffer[..<count]
        }
        return text
    }

    /// Reads to end of file (or a 5 s silence).
    @discardableResult
    mutating func readToEnd() throws -> String {
        try read { _ in false }
    }

    var text: String { String(decoding: received, as: UTF8.self) }
}

/// A herald-chat client process.
func startChatClient(
    _ user: String,
    server: ChatServerProcess,
    _ extra: [String] = ["--no-presence"],
    environment: [String: String?] = [:]
) throws -> ChildProcess {
    try ChildProcess(
        TestBinaries.path("herald-chat"),
        ["--user", user, "--server", server.url, "--json"] + extra,
        environment: environment
    )
}

/// The messages (not statuses or notices) a --json client printed, as (user, text).
func chatMessages(_ lines: [String]) -> [(user: String?, text: String)] {
    lines.compactMap { line in
        guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
            let text = object["message"] as? String
        else { return nil }
        return (object["user"] as? String, text)
    }
}

struct ChatTestError: Error, CustomStringConvertible {
    var description: String
}
