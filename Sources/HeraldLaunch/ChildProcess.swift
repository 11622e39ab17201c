import Foundation
import Synchronization

/// A child process whose stdout and stderr are collected line by line, for `herald demo` and the end-to-end tests.
///
/// Callers wait on conditions (a line appearing, the process exiting), each with a deadline, never on fixed sleeps.
/// Every wait also ends with `CancellationError` when its task is cancelled, so a demo interrupted by Ctrl-C stops
/// waiting at once. A `ChildProcess` that is released while its process still runs kills it with SIGKILL.
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

    private let process: Process
    private let box = Box()
    private let stdinPipe = Pipe()
    /// The child's process id.
    public let pid: Int32
    /// The executable and arguments, for messages.
    public let commandLine: String

    /// Starts `executable` with `arguments`; `environment` entries are added to (or, with a nil value,
    /// removed from) this process's environment.
    public init(_ executable: String, _ arguments: [String] = [], environment: [String: String?] = [:]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        for (key, value) in environment { env[key] = value }
        process.environment = env
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = stdinPipe
        self.process = process
        self.commandLine = ([executable] + arguments).joined(separator: " ")
        let state = self.box
        // Plain threads blocking in read(2) until end of file: no dispatch sources to tear down while another
        // thread reads the same pipe, which raced inside libdispatch.
        // read(2) directly, retrying EINTR: stopping or continuing a child sends this process SIGCHLD, which can
        // interrupt the read, and FileHandle.availableData reports that as an empty read, indistinguishable from
        // end of file.
        for (pipe, path) in [(out, \State.stdout), (err, \State.stderr)] {
            let handle = pipe.fileHandleForReading
            let thread = Thread {
                let descriptor = handle.fileDescriptor
                var buffer = [UInt8](repeating: 0, count: 65536)
                while true {
                    let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
                    if count < 0 && errno == EINTR { continue }
                    if count <= 0 { break }
                    ChildProcess.collect(Data(buffer[0..<count]), into: path, state: state)
                }
                ChildProcess.finishOutput(path, state: state)
                withExtendedLifetime(handle) {}
            }
            thread.start()
        }
        process.terminationHandler = { process in
            ChildProcess.terminated(status: process.terminationStatus, state: state)
        }
        try Self.runWithNoSignalsBlocked(process)
        self.pid = process.processIdentifier
    }

    /// The process has exited with `status`: reported by Foundation's termination handler, or found by
    /// ``peekExit()`` when that handler is late or never comes (seen in loaded test runs: a zombie child that
    /// Foundation did not reap for minutes).
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

    /// Looks whether the process has exited without reaping it (`waitid` with `WNOWAIT`), and reports the exit if
    /// so, with the status Foundation would give: the exit code, or the number of the signal that killed it.
    /// Reaping stays Foundation's.
    private func peekExit() {
        guard box.mutex.withLock({ $0.terminationStatus == nil }) else { return }
        var info = siginfo_t()
        guard waitid(P_PID, id_t(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0,
            info._sifields._sigchld.si_pid == pid
        else { return }
        ChildProcess.terminated(status: info._sifields._sigchld.si_status, state: box)
    }

    /// Starts `process` from a thread that blocks no signal, so the child starts with none blocked, as it would from a
    /// shell or systemd.
    ///
    /// A child inherits the signal mask of the thread that spawns it, and the threads of Swift's concurrency pool and
    /// libdispatch block SIGHUP, SIGUSR1, SIGUSR2, SIGALRM and more: a daemon spawned from one of them would never see
    /// those signals, and a test sending them would prove nothing.
    private static func runWithNoSignalsBlocked(_ process: Process) throws {
        let outcome = Mutex<Result<Void, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            var none = sigset_t()
            sigemptyset(&none)
            pthread_sigmask(SIG_SETMASK, &none, nil)
            let result = Result { try process.run() }
            outcome.withLock { $0 = result }
            done.signal()
        }
        thread.start()
        done.wait()
        try outcome.withLock { $0! }.get()
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
        peekExit()
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
            peekExit()
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
            peekExit()
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
        var deadline = ContinuousClock.now + timeout
        var graceGiven = false
        while true {
            peekExit()
            let (status, version) = box.mutex.withLock { ($0.exitStatus, $0.version) }
            if let status { return status }
            try Task.checkCancellation()
            if ContinuousClock.now >= deadline {
                // The timeout is for a process that does not exit. One that has exited, but whose exit Foundation has
                // not reported yet, gets more time: a loaded full test run has delayed that report past 10 s (daemons
                // that logged "stopped", or were SIGKILLed, reported "still running").
                if !graceGiven && hasExited {
                    graceGiven = true
                    deadline = ContinuousClock.now + .seconds(30)
                    continue
                }
                throw Timeout(description: "still running after \(timeout): \(commandLine)\nstderr: \(stderr)")
            }
            await nextChange(after: version, before: deadline)
        }
    }

    /// Whether the process has exited, whether or not it has been reaped: `waitid` with `WNOWAIT` looks without
    /// reaping, so Foundation still collects the status; `ECHILD` means it already has.
    private var hasExited: Bool {
        var info = siginfo_t()
        if waitid(P_PID, id_t(pid), &info, WEXITED | WNOHANG | WNOWAIT) == -1 { return errno == ECHILD }
        return info._sifields._sigchld.si_pid == pid
    }

    /// Sends `signal` to the process.
    public func signal(_ signal: Int32) {
        if exitStatus == nil { kill(pid, signal) }
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

    /// Writes `text` to the process's stdin.
    public func writeStdin(_ text: String) {
        stdinPipe.fileHandleForWriting.write(Data(text.utf8))
    }

    /// Closes the process's stdin.
    public func closeStdin() {
        try? stdinPipe.fileHandleForWriting.close()
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
        if exitStatus == nil {
            kill(pid, SIGKILL)
        }
    }
}
