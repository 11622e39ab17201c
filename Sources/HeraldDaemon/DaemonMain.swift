import HeraldCommandLine
import HeraldPosix

#if canImport(Glibc)
import Glibc
#endif

/// heraldd's whole life as a function: parse the command line, set up the socket, run the event loop until SIGTERM
/// or SIGINT, and end the process.
///
/// `heraldd`'s `main.swift` calls it, and so does `herald demo`'s hidden daemon role, so the daemon that the demo
/// shows is the same code that a session runs.
///
/// Exit codes: 0 after a clean shutdown, 1 when the daemon cannot start, 64 for a usage error.
public enum DaemonMain {
    /// Runs heraldd with `arguments` (without the program name) and exits the process, through HeraldCommandLine's
    /// `runBlockingMain` (runMain for a loop that blocks the main thread and reads signals from a signalfd), as
    /// every Herald executable: `--help` and `--version` on stdout, a usage error on stderr with 64, and
    /// `Error: ...` with 1 when the daemon cannot start.
    ///
    /// - Parameter arguments: The command line after the program name.
    public static func run(arguments: [String]) -> Never {
        // Connections are bounded by descriptors: take all the hard limit allows before the default of
        // --max-connections is derived from it. heraldd uses epoll, never select, so no FD_SETSIZE holds it back.
        let inherited = (try? DescriptorLimit.current())?.soft ?? 0
        let descriptorLimit = (try? DescriptorLimit.raiseSoftToHard()) ?? DescriptorLimit(soft: 1024, hard: 1024)
        runBlockingMain(
            DaemonOptions.spec,
            version: "heraldd \(DaemonOptions.version)",
            arguments: arguments,
            options: { parsed throws(UsageError) in
                var options = try DaemonOptions(parsed, descriptorLimit: descriptorLimit.soft)
                options.inheritedDescriptorLimit = inherited
                return options
            },
            run: serve
        )
    }

    /// Runs the daemon until SIGTERM or SIGINT.
    private static func serve(_ options: DaemonOptions) throws(CommandFailure) -> ExitCode {
        // Logging to a closed stderr must not kill the daemon (runMain ignores SIGPIPE; sockets use MSG_NOSIGNAL on
        // their own). SIGUSR1, SIGUSR2 and SIGALRM mean nothing to heraldd, and their default action would end it,
        // losing every retained value and will and leaving the socket file behind. SIGHUP (reload), SIGTERM and
        // SIGINT are read from a signalfd in the loop instead (`Daemon.handleSignals`).
        do {
            try SignalDisposition.ignore([SIGUSR1, SIGUSR2, SIGALRM])
            var daemon = try Daemon(options: options)
            daemon.run()
            return .success
        } catch {
            throw .failure("\(error)")
        }
    }
}
