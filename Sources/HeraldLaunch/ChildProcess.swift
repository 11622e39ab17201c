import Foundation
import HeraldPosix
import Synchronization

/// A child process whose stdout and stderr are collected line by line, for `herald demo` and the end-to-end tests.
///
/// Callers wait on conditions (a line appearing, the process exiting), each with a deadline, never on fixed sleeps.
/// Every wait also ends with `CancellationError` when its task is cancelled, so a demo interrupted by Ctrl-C stops
/// waiting at once. A `ChildProcess` that is released while its process still runs kills it with SIGKILL, and so does
/// the end of this process.
public final class ChildProcess: Sendable {
    /// Raised when a wait runs past its deadline; the message says what was awaited and what was seen.
    public struct Timeout: Error, CustomStringConvertible {
        public var description: String
    }

    private struct State {
        let stdout = Output()
        let stderr = Output()
        /// The exit status, reported once both outputs have reached end of file too, so no output is missed.
        var exitStatus: Int32?
        var terminationStatus: Int32?
        var finishedOutputs = 0
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
        var nextWaiter: UInt64 = 0
        /// Counts changes (output or exit), so a waiter registering late sees it missed one.
        var version: UInt64 = 0
    }

    /// A class, so appending to it through the state's key path mutates in place instead of copying the arrays.
    /// It is only touched under the mutex of the `State` that holds it, which is what makes it safe to share.
    private final class Output: @unchecked Sendable {
        var lines: [String] = []
        var partial: [UInt8] = []
        var bytes: [UInt8] = []
    }

    private final class Box: Sendable {
        let mutex = Mutex(State())
    }

    private let box = Box()
    /// The write end of the child's stdin, until `closeStdin()`; -1 once closed.
    private let stdin: Mutex<Int32>
    /// The child's process id.
    public let pid: Int32
    /// The executable and arguments, for messages.
    public let commandLine: String

    /// Starts `executable` (an absolute path) with `arguments`; `environment` entries are added to (or, with a nil
    /// value, removed from) this process's environment.
    ///
    /// The child is forked by HeraldPosix's `ChildProcesses.spawn`, not Foundation's `Process`: in Swift 6.3.1
    /// `Process.run()` on Linux crashes now and then (a 256-byte over-read of each `/proc/self/fd` entry, fixed
    /// upstream in swift-corelibs-foundation #5472), and a test run that starts hundreds of processes met it. The
    /// child leads a session of its own, starts with no signal blocked or ignored (the threads of Swift's
    /// concurrency pool block several, and a child would inherit that mask), and has its stdin, stdout and stderr
    /// on pipes.
    ///
    /// The child is killed (SIGKILL) when this process ends, however it ends: a test run killed by a timeout, or a
    /// `herald demo` killed with SIGKILL, leaves no daemon behind. It is forked by the shim's spawner thread, which
    /// lives as long as the process (``ChildProcesses/ParentDeath/killsWhenProcessEnds``), so the pool thread that
    /// calls this may end without taking the child with it.
    ///
    /// - Throws: `SystemError` when the pipes cannot be made or the program cannot be started.
    public init(_ executable: String, _ arguments: [String] = [], environment: [String: String?] = [:]) throws {
        var env = ProcessInfo.processInfo.environment
        for (key, value) in environment { env[key] = value }
        // A socket rather than a pipe for stdin: writes to it use MSG_NOSIGNAL, so a child that exits before reading
        // costs this process no SIGPIPE (the test runner does not ignore it).
        let input = try UnixSocket.pair()
        let out = try ChildProcesses.makeBlockingPipe()
        let err = try ChildProcesses.makeBlockingPipe()
        let pid = try ChildProcesses.spawn(
            executable: executable,
            arguments: [executable] + arguments,
            environment: env.map { "\($0.key)=\($0.value)" },
            workingDirectory: nil,
            standardOutput: out.writeEnd,
            standardError: err.writeEnd,
            standardInput: input.second.rawValue,
            parentDeath: .killsWhenProcessEnds
        )
        self.pid = pid
        self.commandLine = ([executable] + arguments).joined(separator: " ")
        let parentEnd = input.first
        stdin = Mutex(parentEnd.release())
        let state = self.box
        // Plain threads blocking in read(2) until end of file: no dispatch sources to tear down while another thread
        // reads the same pipe, which raced inside libdispatch. EINTR is retried (a stopped or continued child sends
        // this process SIGCHLD).
        for (descriptor, path) in [
            (out.closingWriteEnd().release(), \State.stdout),
            (err.closingWriteEnd().release(), \State.stderr),
        ] {
            let thread = Thread {
                var buffer = [UInt8](repeating: 0, count: 65536)
                while true {
                    let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
                    if count < 0 && errno == EINTR { continue }
                    if count <= 0 { break }
                    ChildProcess.collect(Data(buffer[0..<count]), into: path, state: state)
                }
                close(descriptor)
                ChildProcess.finishOutput(path, state: state)
            }
            thread.start()
        }
    }

    /// The process has exited with `status` (its exit code, or the number of the signal that killed it), as
    /// ``reapIfExited()`` found.
    private static func terminated(status: Int32, state box: Box) {
        let (waiters, first) = box.mutex.withLock { state in
            let first = state.terminationStatus == nil
            if first { state.terminationStatus = status }
            return (ChildProcess.settleIfDone(&state), first)
        }
        for waiter in waiters { waiter.resume() }
        guard first else { return }
        // A grandchild that inherited stdout keeps the pipe open past the exit: report the exit anyway soon.
        DispatchQueue.global().asyncAfter(deadline: .now() + 2) {
            let waiters = box.mutex.withLock { state in
                if state.exitStatus == nil { state.finishedOutputs = 2 }
                return ChildProcess.settleIfDone(&state)
            }
            for waiter in waiters { waiter.resume() }
        }
    }

    /// Reaps the process if it has exited, and reports the exit. Every wait calls it each time it wakes (at least
    /// every 100 ms), so an exit is seen without a thread per child.
    private func reapIfExited() {
        guard box.mutex.withLock({ $0.terminationStatus == nil }) else { return }
        guard let exit = ChildProcesses.reapIfExited(pid) else { return }
        switch exit {
        case .exited(let code): ChildProcess.terminated(status: code, state: box)
        case .killed(let signal): ChildProcess.terminated(status: signal, state: box)
        }
    }

    private static func collect(_ data: Data, into path: KeyPath<State, Output>, state box: Box) {
        guard !data.isEmpty else { return }
        let waiters = box.mutex.withLock { state in
            let output = state[keyPath: path]
            output.bytes.append(contentsOf: data)
            var start = data.startIndex
            while let newline = data[start...].firstIndex(of: UInt8(ascii: "\n")) {
                output.partial.append(contentsOf: data[start..<newline])
                output.lines.append(String(decoding: output.partial, as: UTF8.self))
                output.partial.removeAll(keepingCapacity: true)
                start = data.index(after: newline)
            }
            output.partial.append(contentsOf: data[start...])
            state.version += 1
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// An output reached end of file.
    private static func finishOutput(_ path: KeyPath<State, Output>, state box: Box) {
        let waiters = box.mutex.withLock { state in
            ChildProcess.flushPartial(state[keyPath: path])
            state.finishedOutputs += 1
            state.version += 1
            return ChildProcess.settleIfDone(&state)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Reports the exit once the process has exited and both outputs are drained; returns the waiters to resume.
    private static func settleIfDone(_ state: inout State) -> [CheckedContinuation<Void, Never>] {
        if state.exitStatus == nil, state.finishedOutputs == 2, let status = state.terminationStatus {
            state.exitStatus = status
            state.version += 1
        }
        defer { state.waiters = [:] }
        return Array(state.waiters.values)
    }

    private static func flushPartial(_ output: Output) {
        if !output.partial.isEmpty {
            output.lines.append(String(decoding: output.partial, as: UTF8.self))
            output.partial.removeAll()
        }
    }

    /// Complete lines written to stdout so far.
    public var stdoutLines: [String] { box.mutex.withLock { $0.stdout.lines } }
    /// Complete lines written to stderr so far.
    public var stderrLines: [String] { box.mutex.withLock { $0.stderr.lines } }
    /// Everything written to stdout so far, as text.
    public var stdout: String { box.mutex.withLock { String(decoding: $0.stdout.bytes, as: UTF8.self) } }
    /// Everything written to stderr so far, as text.
    public var stderr: String { box.mutex.withLock { String(decoding: $0.stderr.bytes, as: UTF8.self) } }
    /// The exit status, once the process has exited (a signal shows as its number, as Foundation reports).
    public var exitStatus: Int32? {
        reapIfExited()
        return box.mutex.withLock { $0.exitStatus }
    }

    /// Waits until `condition` holds for the collected output, or the process exits, or `timeout` passes.
    ///
    /// - Throws: `Timeout` naming `what` when the deadline passes or the process exits first, or `CancellationError`.
    public func wait(
        for what: String,
        timeout: Duration = .seconds(20),
        _ condition: @Sendable (_ stdout: [String], _ stderr: [String]) -> Bool
    ) async throws {
        let deadline = ContinuousClock.now + timeout
        while true {
            reapIfExited()
            let (done, met, version) = box.mutex.withLock {
                ($0.exitStatus != nil, condition($0.stdout.lines, $0.stderr.lines), $0.version)
            }
            if met { return }
            try Task.checkCancellation()
            if done || ContinuousClock.now >= deadline {
                throw Timeout(
                    description: "\(done ? "exited before" : "timed out waiting for") \(what): \(commandLine)\n"
                        + "stdout: \(stdout)\nstderr: \(stderr)"
                )
            }
            await nextChange(after: version, before: deadline)
        }
    }

    /// Waits for a stdout line containing `text` and returns it.
    @discardableResult
    public func waitForStdoutLine(containing text: String, timeout: Duration = .seconds(20)) async throws -> String {
        try await waitForLine(containing: text, in: \State.stdout, named: "stdout", timeout: timeout)
    }

    /// Waits for a stderr line containing `text` and returns it.
    @discardableResult
    public func waitForStderrLine(containing text: String, timeout: Duration = .seconds(20)) async throws -> String {
        try await waitForLine(containing: text, in: \State.stderr, named: "stderr", timeout: timeout)
    }

    /// Scans only the lines that arrived since the last look, so waiting on a chatty process stays linear.
    private func waitForLine(
        containing text: String,
        in path: any KeyPath<State, Output> & Sendable,
        named stream: String,
        timeout: Duration
    ) async throws -> String {
        let deadline = ContinuousClock.now + timeout
        var scanned = 0
        while true {
            reapIfExited()
            let (found, exited, version, count) = box.mutex.withLock { state -> (String?, Bool, UInt64, Int) in
                let lines = state[keyPath: path].lines
                let hit = lines[scanned...].first { $0.contains(text) }
                return (hit, state.exitStatus != nil, state.version, lines.count)
            }
            if let found { return found }
            try Task.checkCancellation()
            scanned = count
            if exited || ContinuousClock.now >= deadline {
                throw Timeout(
                    description: "\(exited ? "exited before" : "timed out waiting for") a \(stream) line containing "
                        + "\(text): \(commandLine)\nstdout: \(stdout.suffix(2000))\nstderr: \(stderr.suffix(2000))"
                )
            }
            await nextChange(after: version, before: deadline)
        }
    }

    /// Waits for the process to exit and returns its status.
    ///
    /// - Throws: `Timeout` if it is still running after `timeout`, or `CancellationError`.
    @discardableResult
    public func waitForExit(timeout: Duration = .seconds(20)) async throws -> Int32 {
        let deadline = ContinuousClock.now + timeout
        while true {
            reapIfExited()
            let (status, version) = box.mutex.withLock { ($0.exitStatus, $0.version) }
            if let status { return status }
            try Task.checkCancellation()
            if ContinuousClock.now >= deadline {
                throw Timeout(description: "still running after \(timeout): \(commandLine)\nstderr: \(stderr)")
            }
            await nextChange(after: version, before: deadline)
        }
    }

    /// Sends `signal` to the process, unless it has been reaped (its pid may then belong to another process).
    public func signal(_ signal: Int32) {
        if box.mutex.withLock({ $0.terminationStatus == nil }) { ChildProcesses.send(signal, to: pid) }
    }

    /// Stops the process: SIGTERM, then SIGKILL if it has not exited within `grace`.
    ///
    /// - Returns: the exit status, or nil if even SIGKILL was not reported within two seconds. Cancellation does
    ///   not cut this short: stopping is what an interrupted caller does on its way out.
    @discardableResult
    public func stop(grace: Duration = .seconds(3)) async -> Int32? {
        signal(SIGTERM)
        if let status = await Task.detached(operation: { try? await self.waitForExit(timeout: grace) }).value {
            return status
        }
        signal(SIGKILL)
        return await Task.detached(operation: { try? await self.waitForExit(timeout: .seconds(2)) }).value
    }

    /// Writes `text` to the process's stdin; a child that has closed its stdin, or exited, is not an error.
    public func writeStdin(_ text: String) {
        stdin.withLock { descriptor in
            guard descriptor >= 0 else { return }
            ChildProcesses.writeInput(Array(text.utf8), to: descriptor)
        }
    }

    /// Closes the process's stdin.
    public func closeStdin() {
        stdin.withLock { descriptor in
            if descriptor >= 0 { close(descriptor) }
            descriptor = -1
        }
    }

    /// Suspends until new output or the exit arrives, or until `deadline` (at most 100 ms later, so a
    /// missed wake-up costs little).
    private func nextChange(after version: UInt64, before deadline: ContinuousClock.Instant) async {
        let id = box.mutex.withLock { state -> UInt64 in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        let limit = min(deadline, ContinuousClock.now + .milliseconds(100))
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                await withCheckedContinuation { continuation in
                    let resumeNow = self.box.mutex.withLock { state -> Bool in
                        if state.version != version { return true }
                        state.waiters[id] = continuation
                        return false
                    }
                    if resumeNow { continuation.resume() }
                }
            }
            group.addTask {
                try? await Task.sleep(until: limit, clock: .continuous)
                let waiter = self.box.mutex.withLock { $0.waiters.removeValue(forKey: id) }
                waiter?.resume()
            }
            await group.next()
            group.cancelAll()
            let waiter = self.box.mutex.withLock { $0.waiters.removeValue(forKey: id) }
            waiter?.resume()
        }
    }

    deinit {
        closeStdin()
        reapIfExited()
        guard box.mutex.withLock({ $0.terminationStatus == nil }) else { return }
        ChildProcesses.send(SIGKILL, to: pid)
        // Reaped by a thread of its own, so no zombie is left for the rest of the run.
        let pid = self.pid
        Thread { _ = ChildProcesses.waitForExit(pid) }.start()
    }
}
