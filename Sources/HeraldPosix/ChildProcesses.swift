internal import CHeraldShim

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How a child process ended.
public enum ChildExit: Sendable, Hashable, CustomStringConvertible {
    /// It called exit with this status.
    case exited(Int32)
    /// A signal with this number killed it.
    case killed(signal: Int32)

    /// "exited 1", or "killed by signal 9 (SIGKILL)".
    public var description: String {
        switch self {
        case .exited(let code):
            return "exited \(code)"
        case .killed(let signal):
            let name = ChildExit.signalNames[signal].map { " (\($0))" } ?? ""
            return "killed by signal \(signal)\(name)"
        }
    }

    private static let signalNames: [Int32: String] = [
        SIGHUP: "SIGHUP", SIGINT: "SIGINT", SIGQUIT: "SIGQUIT", SIGILL: "SIGILL", SIGABRT: "SIGABRT",
        SIGBUS: "SIGBUS", SIGFPE: "SIGFPE", SIGKILL: "SIGKILL", SIGSEGV: "SIGSEGV", SIGPIPE: "SIGPIPE",
        SIGALRM: "SIGALRM", SIGTERM: "SIGTERM", SIGUSR1: "SIGUSR1", SIGUSR2: "SIGUSR2",
    ]
}

/// Starting and reaping child processes without threads or Foundation: fork and exec in the C shim, exits
/// collected with `waitpid` when SIGCHLD arrives on the daemon's signalfd.
public enum ChildProcesses {
    /// A pipe whose read end is non-blocking and whose write end is for a child's stdout or stderr.
    public struct OutputPipe: ~Copyable {
        /// The daemon's end.
        public var readEnd: FileDescriptor
        /// The child's end; close it once the child has started.
        public var writeEnd: FileDescriptor

        /// Closes the child's end, once the child has its copy, and keeps the daemon's.
        ///
        /// - Returns: The read end, which reads end of file once every copy of the write end is closed.
        public consuming func closingWriteEnd() -> FileDescriptor {
            writeEnd.close()
            return readEnd
        }
    }

    /// Makes a pipe for a child's output: both ends close-on-exec, the read end non-blocking.
    ///
    /// - Throws: ``SystemError``, e.g. EMFILE.
    public static func makeOutputPipe() throws(SystemError) -> OutputPipe {
        var ends: [Int32] = [-1, -1]
        _ = try completedSyscall("pipe2") { herald_pipe(&ends, 1) }
        return OutputPipe(readEnd: FileDescriptor(owning: ends[0]), writeEnd: FileDescriptor(owning: ends[1]))
    }

    /// Makes a pipe with both ends blocking and close-on-exec, for a child's stdin, or for output read by a thread
    /// of its own.
    ///
    /// - Throws: ``SystemError``, e.g. EMFILE.
    public static func makeBlockingPipe() throws(SystemError) -> OutputPipe {
        var ends: [Int32] = [-1, -1]
        _ = try completedSyscall("pipe2") { herald_pipe(&ends, 0) }
        return OutputPipe(readEnd: FileDescriptor(owning: ends[0]), writeEnd: FileDescriptor(owning: ends[1]))
    }

    /// When a spawned child is killed with SIGKILL because its parent is gone. Linux's `PR_SET_PDEATHSIG` does it,
    /// and it fires when the thread that forked the child ends, which is the process only for a thread that lives as
    /// long as it.
    public enum ParentDeath: Sendable {
        /// Never: the child outlives this process.
        case ignored
        /// When the calling thread ends: for a daemon's children, forked from its one long-lived thread. From a
        /// thread of a pool, the child dies whenever the pool retires that thread.
        case killsWhenThreadEnds
        /// When this process ends, however it ends (SIGKILL included), and not before: the child is forked by a
        /// thread of the shim's own that never ends, while the calling thread waits. For children started from any
        /// thread, such as a test's or a command's on Swift's concurrency pool.
        case killsWhenProcessEnds

        var flags: Int32 {
            switch self {
            case .ignored: 0
            case .killsWhenThreadEnds: HERALD_SPAWN_DIE_WITH_PARENT
            case .killsWhenProcessEnds: HERALD_SPAWN_DIE_WITH_PROCESS
            }
        }
    }

    /// Starts `executable` as a child of its own session, with no signal blocked or ignored (see `herald_spawn` in
    /// the shim for every step).
    ///
    /// - Parameters:
    ///   - executable: An absolute path.
    ///   - arguments: The whole argument vector, `argv[0]` included.
    ///   - environment: `KEY=VALUE` entries, the child's whole environment.
    ///   - workingDirectory: Where it starts, or nil for this process's.
    ///   - standardOutput: The descriptor to become its stdout.
    ///   - standardError: The descriptor to become its stderr.
    ///   - descriptorSoftLimit: The soft `RLIMIT_NOFILE` to give it, or 0 to keep this process's.
    ///   - standardInput: The descriptor to become its stdin (borrowed), or -1 for `/dev/null`.
    ///   - parentDeath: When it is killed (SIGKILL) for this process's sake: by default when the calling thread
    ///     ends, for a daemon's children forked from its one long-lived thread.
    /// - Returns: its pid.
    /// - Throws: ``SystemError`` when fork fails, or when `chdir` or `execve` fails in the child (the child is then
    ///   already reaped).
    public static func spawn(
        executable: String,
        arguments: [String],
        environment: [String],
        workingDirectory: String?,
        standardOutput: borrowing FileDescriptor,
        standardError: borrowing FileDescriptor,
        descriptorSoftLimit: UInt64 = 0,
        standardInput: Int32 = -1,
        parentDeath: ParentDeath = .killsWhenThreadEnds
    ) throws(SystemError) -> Int32 {
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup($0) } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        let out = standardOutput.rawValue
        let err = standardError.rawValue
        return try completedSyscall("start \(executable)") {
            herald_spawn(
                executable,
                argv,
                envp,
                workingDirectory,
                standardInput,
                out,
                err,
                descriptorSoftLimit,
                parentDeath.flags
            )
        }
    }

    /// A child started by ``start(executable:arguments:environment:workingDirectory:standardOutput:standardError:descriptorSoftLimit:)``:
    /// its pid, and the descriptor that says whether its exec worked.
    public struct Started: ~Copyable {
        /// The child's pid.
        public let pid: Int32
        /// Non-blocking; readable once the child exec'ed or failed: watch it, then ask ``ChildProcesses/report(_:)``.
        public var report: FileDescriptor

        /// The report descriptor, for its new owner.
        public consuming func takeReport() -> FileDescriptor { report }
    }

    /// What a started child's report says.
    public enum ExecReport: Sendable, Hashable {
        /// Not known yet.
        case pending
        /// The program is running.
        case executed
        /// The child could not become the program, at this step and with this errno; it exits 127.
        case failed(SpawnStep, Errno)
    }

    /// ``spawn(executable:arguments:environment:workingDirectory:standardOutput:standardError:descriptorSoftLimit:standardInput:parentDeath:)``
    /// without waiting for the exec: for an event loop, which must not wait for the child to be scheduled. The child
    /// dies when the calling thread does, and gets stdin from `/dev/null`.
    ///
    /// - Returns: the child's pid and its report descriptor.
    /// - Throws: ``SystemError`` when pipe2 or fork fails.
    public static func start(
        executable: String,
        arguments: [String],
        environment: [String],
        workingDirectory: String?,
        standardOutput: borrowing FileDescriptor,
        standardError: borrowing FileDescriptor,
        descriptorSoftLimit: UInt64 = 0
    ) throws(SystemError) -> Started {
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup($0) } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var report: Int32 = -1
        let out = standardOutput.rawValue
        let err = standardError.rawValue
        let pid = try completedSyscall("start \(executable)") {
            herald_spawn_async(
                executable,
                argv,
                envp,
                workingDirectory,
                -1,
                out,
                err,
                descriptorSoftLimit,
                HERALD_SPAWN_DIE_WITH_PARENT,
                &report
            )
        }
        return Started(pid: pid, report: FileDescriptor(owning: report))
    }

    /// Reads a started child's report (see ``Started``).
    public static func report(_ descriptor: borrowing FileDescriptor) -> ExecReport {
        var step: Int32 = 0
        var error: Int32 = 0
        switch herald_spawn_report(descriptor.rawValue, &step, &error) {
        case 0:
            return .executed
        case 1:
            let which: SpawnStep =
                switch step {
                case HERALD_SPAWN_STEP_FORK: .fork
                case HERALD_SPAWN_STEP_CHDIR: .workingDirectory
                case HERALD_SPAWN_STEP_EXEC: .exec
                default: .setup
                }
            return .failed(which, Errno(rawValue: error))
        default:
            // EAGAIN: not yet. Any other error of a pipe's read end is taken as no news.
            return .pending
        }
    }

    /// The step of a spawn that failed: which one tells whose fault it is.
    public enum SpawnStep: Sendable, Hashable {
        /// fork itself (EAGAIN, ENOMEM): the daemon's.
        case fork
        /// The child's setup of its descriptors and signals.
        case setup
        /// The change to the working directory: the directory is missing or not searchable.
        case workingDirectory
        /// execve: the program, or the interpreter its `#!` line names.
        case exec
    }

    /// The step at which the last ``spawn(executable:arguments:environment:workingDirectory:standardOutput:standardError:descriptorSoftLimit:standardInput:parentDeath:)``
    /// on this thread failed, once it has thrown.
    public static func lastFailedSpawnStep() -> SpawnStep {
        switch herald_spawn_failed_step() {
        case HERALD_SPAWN_STEP_FORK: .fork
        case HERALD_SPAWN_STEP_CHDIR: .workingDirectory
        case HERALD_SPAWN_STEP_EXEC: .exec
        default: .setup
        }
    }

    /// Makes this process the reaper of its orphaned descendants (Linux's `PR_SET_CHILD_SUBREAPER`): a process
    /// whose parent dies is reparented to the nearest subreaper among its ancestors instead of init, so what a
    /// child left running, even in a session of its own, stays this process's to find and end.
    ///
    /// - Throws: ``SystemError`` where the kernel has no such thing.
    public static func becomeSubreaper() throws(SystemError) {
        _ = try completedSyscall("prctl(PR_SET_CHILD_SUBREAPER)") { herald_become_subreaper() }
    }

    /// Collects every child that has exited, without waiting.
    ///
    /// Only for a process whose children are all its own to reap, as heraldd's plugins are: it takes any child's
    /// exit, including one that other code (Foundation's `Process`) is waiting for.
    ///
    /// - Returns: each exited child's pid and how it ended; empty when none has (or there are no children).
    public static func reapExited() -> [(pid: Int32, status: ChildExit)] {
        reapExited(limit: .max)
    }

    /// Collects at most `limit` children that have exited, without waiting: for a loop that handles a bounded
    /// number of exits a turn and comes back for the rest.
    ///
    /// - Returns: each exited child's pid and how it ended; fewer than `limit` means none is left to collect.
    public static func reapExited(limit: Int) -> [(pid: Int32, status: ChildExit)] {
        var exited: [(pid: Int32, status: ChildExit)] = []
        while exited.count < limit, let one = reap(-1) {
            exited.append(one)
        }
        return exited
    }

    /// Collects the child `pid` if it has exited, without waiting.
    ///
    /// - Returns: how it ended, or nil while it runs (or when it is not a child of this process).
    public static func reapIfExited(_ pid: Int32) -> ChildExit? {
        reap(pid)?.status
    }

    private static func reap(_ which: Int32) -> (pid: Int32, status: ChildExit)? {
        var code: Int32 = 0
        var signal: Int32 = 0
        // -1 is ECHILD (no such child), EINTR being retried in the shim; 0 is "not exited".
        let pid = herald_reap_child(which, &code, &signal)
        guard pid > 0 else { return nil }
        return (pid, signal == 0 ? .exited(code) : .killed(signal: signal))
    }

    /// Waits until the child `pid` exits, and reaps it; blocks the calling thread.
    ///
    /// - Returns: how it ended, or nil when it is not a child of this process (or was reaped already).
    public static func waitForExit(_ pid: Int32) -> ChildExit? {
        var code: Int32 = 0
        var signal: Int32 = 0
        guard herald_wait_child(pid, &code, &signal) == pid else { return nil }
        return signal == 0 ? .exited(code) : .killed(signal: signal)
    }

    /// Writes all of `bytes` to `descriptor`, a socket that is a child's stdin (`UnixSocket.pair()`), with
    /// `MSG_NOSIGNAL`: a child that is gone is `false`, never a SIGPIPE for this process.
    ///
    /// - Returns: whether every byte was written.
    @discardableResult
    public static func writeInput(_ bytes: [UInt8], to descriptor: Int32) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes.withUnsafeBytes { buffer in
                herald_send(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
            }
            if sent < 0 && errno == EINTR { continue }
            if sent <= 0 { return false }
            offset += sent
        }
        return true
    }

    /// Sends `signal` to the process `pid`; a process that is already gone is not an error.
    public static func send(_ signal: Int32, to pid: Int32) {
        _ = kill(pid, signal)
    }
}
