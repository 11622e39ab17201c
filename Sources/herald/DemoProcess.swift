import Foundation
import Synchronization

/// A child process of `herald demo`: its output collected line by line, waited on with deadlines.
final class DemoProcess: Sendable {
    /// Which stream a line came from.
    enum Stream {
        case stdout
        case stderr
    }

    private struct Lines {
        var stdout: [String] = []
        var stderr: [String] = []
        var partial: [Stream: [UInt8]] = [:]
    }

    let name: String
    private let process: Process
    private let input = Pipe()
    private final class Box: Sendable {
        let mutex = Mutex(Lines())
    }

    private let box = Box()

    /// Starts `executable` with `arguments` and `environment` added to this process's.
    init(name: String, executable: String, arguments: [String], environment: [String: String] = [:]) throws {
        self.name = name
        process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = input
        for (pipe, stream) in [(out, Stream.stdout), (err, Stream.stderr)] {
            pipe.fileHandleForReading.readabilityHandler = { [box] handle in
                let data = handle.availableData
                if data.isEmpty {
                    handle.readabilityHandler = nil
                }
                DemoProcess.collect(data, stream, box)
            }
        }
        try process.run()
    }

    private static func collect(_ data: Data, _ stream: Stream, _ box: Box) {
        box.mutex.withLock { state in
            var partial = state.partial[stream, default: []]
            for byte in data {
                if byte == 0x0A {
                    let line = String(decoding: partial, as: UTF8.self)
                    switch stream {
                    case .stdout: state.stdout.append(line)
                    case .stderr: state.stderr.append(line)
                    }
                    partial.removeAll()
                } else {
                    partial.append(byte)
                }
            }
            state.partial[stream] = partial
        }
    }

    var pid: Int32 { process.processIdentifier }
    var isRunning: Bool { process.isRunning }
    var exitStatus: Int32? { process.isRunning ? nil : process.terminationStatus }
    var stdoutLines: [String] { box.mutex.withLock { $0.stdout } }
    var stderrLines: [String] { box.mutex.withLock { $0.stderr } }

    /// Types a line into the process's standard input.
    func type(_ line: String) {
        try? input.fileHandleForWriting.write(contentsOf: Data((line + "\n").utf8))
    }

    /// Sends `signal` if the process still runs.
    func signal(_ signal: Int32) {
        if process.isRunning {
            kill(process.processIdentifier, signal)
        }
    }

    /// Waits for a line containing `text` on `stream`, checking `interrupted` as it goes.
    ///
    /// - Returns: the line.
    /// - Throws: ``DemoFailure`` if the process exits, `timeout` passes, or the demo is interrupted first.
    @discardableResult
    func waitForLine(
        containing text: String,
        on stream: Stream = .stdout,
        timeout: Duration = .seconds(15)
    ) async throws(DemoFailure) -> String {
        let deadline = ContinuousClock.now + timeout
        while true {
            try DemoInterruption.check()
            let found = box.mutex.withLock { state in
                (stream == .stdout ? state.stdout : state.stderr).first { $0.contains(text) }
            }
            if let found {
                return found
            }
            if !process.isRunning {
                throw DemoFailure("\(name) exited (status \(process.terminationStatus)) before saying '\(text)'")
            }
            if ContinuousClock.now >= deadline {
                throw DemoFailure("\(name) did not say '\(text)' within \(timeout)")
            }
            try? await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Waits for the process to exit.
    ///
    /// - Returns: its status, or nil if it still runs after `timeout`.
    func waitForExit(timeout: Duration) async -> Int32? {
        let deadline = ContinuousClock.now + timeout
        while process.isRunning, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
        return exitStatus
    }

    /// Stops the process: `signal`, then SIGKILL if it has not exited within `grace`.
    func stop(_ signal: Int32 = SIGTERM, grace: Duration = .seconds(3)) async {
        self.signal(signal)
        if await waitForExit(timeout: grace) == nil {
            self.signal(SIGKILL)
            _ = await waitForExit(timeout: .seconds(2))
        }
    }
}

/// Why the demo failed, for `Error:`.
struct DemoFailure: Error {
    var message: String
    var interrupted = false

    init(_ message: String, interrupted: Bool = false) {
        self.message = message
        self.interrupted = interrupted
    }
}

/// SIGINT and SIGTERM during the demo: recorded by a handler, acted on by the demo's waits, which then stop every
/// child and remove the temporary directory before exiting.
enum DemoInterruption {
    private static let received = Atomic<Int32>(0)

    /// Replaces `herald`'s exit-at-once handlers with ones that only record the signal. A handler (unlike SIG_IGN)
    /// is reset to the default by exec, so the children still stop on SIGTERM.
    static func install() {
        for number in [SIGINT, SIGTERM] {
            _ = Glibc.signal(number) { received in
                DemoInterruption.received.store(received, ordering: .relaxed)
            }
        }
    }

    /// The signal received, if any.
    static var signal: Int32? {
        let value = received.load(ordering: .relaxed)
        return value == 0 ? nil : value
    }

    /// Throws an interrupted ``DemoFailure`` once a signal has arrived.
    static func check() throws(DemoFailure) {
        if let signal {
            throw DemoFailure("interrupted by signal \(signal)", interrupted: true)
        }
    }
}
