/// How a plugin's process ended, as `waitid()` or a pidfd reports it.
public enum ProcessExit: Hashable, Sendable, CustomStringConvertible {
    /// It called `exit(code)`.
    case exited(Int32)
    /// A signal ended it.
    case killed(signal: Int32)

    /// Whether this exit is a failure for the restart policy: a non-zero code, or any signal.
    public var isFailure: Bool {
        switch self {
        case .exited(let code): code != 0
        case .killed: true
        }
    }

    /// "exited 1", or "killed by signal 9 (SIGKILL)": what `lastExit` shows.
    public var description: String {
        switch self {
        case .exited(let code):
            return "exited \(code)"
        case .killed(let signal):
            guard let name = Self.signalName(signal) else { return "killed by signal \(signal)" }
            return "killed by signal \(signal) (\(name))"
        }
    }

    /// The name of a signal by its Linux number (x86 and ARM share these), for the common ones.
    static func signalName(_ signal: Int32) -> String? {
        let names = [
            1: "SIGHUP", 2: "SIGINT", 3: "SIGQUIT", 4: "SIGILL", 5: "SIGTRAP", 6: "SIGABRT", 7: "SIGBUS",
            8: "SIGFPE", 9: "SIGKILL", 10: "SIGUSR1", 11: "SIGSEGV", 12: "SIGUSR2", 13: "SIGPIPE", 14: "SIGALRM",
            15: "SIGTERM", 24: "SIGXCPU", 25: "SIGXFSZ", 31: "SIGSYS",
        ]
        return names[Int(signal)]
    }
}
