import HeraldCommandLine
import HeraldCore
import HeraldPosix

#if canImport(Glibc)
import Glibc
#endif

/// `herald-dbus-bridge`: parses the command line, connects to heraldd, and runs the bridge.
public enum DBusBridgeMain {
    /// Runs the bridge on a thread of its own and never returns: the process exits through ``run(arguments:)``.
    ///
    /// Called from a synchronous `main.swift`: an `await` at top level would run the bridge's first steps on the
    /// global concurrent executor, whose libdispatch worker pool, once started, wakes the process every second.
    public static func start(arguments: [String]) -> Never {
        runOnOwnThread { await run(arguments: arguments) }
    }

    /// Runs the bridge and exits the process: `--help` and `--version` on stdout with 0, a usage error on stderr with
    /// 64; then 69 when the daemon is unavailable, and 1 for anything else that stops it.
    ///
    /// - Parameter arguments: The command line after the program name.
    public static func run(arguments: [String]) async -> Never {
        await runMain(
            DBusBridgeOptions.spec,
            version: DBusBridgeOptions.version,
            arguments: arguments,
            options: { parsed throws(UsageError) in try DBusBridgeOptions(parsed) },
            run: { options in ExitCode(rawValue: await bridge(options)) ?? .failure }
        )
    }

    private static func bridge(_ options: DBusBridgeOptions) async -> Int32 {
        let logger = Logger(label: "herald-dbus-bridge", level: options.verbose ? .debug : .info)
        let herald: Herald
        do {
            herald = try await Herald.connect(
                socketPath: options.socketPath,
                options: Herald.Options(
                    clientName: "herald-dbus-bridge",
                    logger: .standardError(label: "herald-dbus-bridge", level: options.verbose ? .debug : .info),
                    reconnects: true,
                    will: Herald.Will(name: DBusBridge.stateName, userInfo: ["running": false], retain: true)
                )
            )
        } catch {
            logger.error("\(error)")
            return error.code == .daemonUnavailable ? 69 : 1
        }
        let bridge = DBusBridge(
            options: options,
            herald: herald,
            environment: ProcessEnvironment.variables(),
            logger: logger
        )
        logger.notice("bridging the session and system buses to Herald")
        // Every task of the bridge runs on Herald's reader thread: the global executor is never started, so an idle
        // bridge has no thread that wakes (libdispatch's workqueue monitor would, once a second).
        await withTaskExecutorPreference(herald.taskExecutor) { await bridge.run() }
        return 1
    }
}
