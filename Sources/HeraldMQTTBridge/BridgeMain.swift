import HeraldCommandLine
import HeraldCore
import HeraldPosix

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `herald-mqtt-bridge`: parses the command line, connects to heraldd, and runs the bridge.
public enum BridgeMain {
    /// Runs the bridge on a thread of its own and never returns: the process exits through ``run(arguments:)``.
    ///
    /// Called from a synchronous `main.swift` (``runOnOwnThread(_:)``): an `await` at top level would run the
    /// bridge's first steps on the global concurrent executor, whose libdispatch worker pool, once started, wakes the
    /// process every second for good.
    public static func start(arguments: [String]) -> Never {
        runOnOwnThread { await run(arguments: arguments) }
    }

    /// Runs the bridge and exits the process, through HeraldCommandLine's ``runMain(_:version:arguments:options:run:)``
    /// as every Herald executable: `--help` and `--version` on stdout with 0, a usage error on stderr with 64; then
    /// 69 when the daemon is unavailable, and 1 for anything else that stops it.
    ///
    /// - Parameter arguments: The command line after the program name.
    public static func run(arguments: [String]) async -> Never {
        await runMain(
            BridgeOptions.spec,
            version: BridgeOptions.version,
            arguments: arguments,
            options: { parsed throws(UsageError) in try BridgeOptions(parsed) },
            run: { options in ExitCode(rawValue: await bridge(options)) ?? .failure }
        )
    }

    /// Connects to heraldd and runs the bridge until it stops.
    ///
    /// - Returns: The exit status: 64 for options that do not fit together, 69 when the daemon is unavailable, 1
    ///   for anything else.
    private static func bridge(_ options: BridgeOptions) async -> Int32 {
        let logger = Logger(label: "herald-mqtt-bridge", level: options.verbose ? .debug : .info)
        let hostID: String
        if let id = options.hostID {
            hostID = id
        } else {
            guard let text = try? String(contentsOfFile: "/etc/machine-id", encoding: .utf8),
                let id = text.split(whereSeparator: \.isWhitespace).first.map(String.init),
                BridgeOptions.isPlainSegment(id)
            else {
                logger.error("cannot read a host id from /etc/machine-id: give --host-id")
                return 64
            }
            hostID = id
        }
        var password: [UInt8]?
        if let path = options.passwordFile {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
                logger.error("cannot read the password file \(path)")
                return 1
            }
            password = Array((text.split(separator: "\n", omittingEmptySubsequences: false).first ?? "").utf8)
        }
        let herald: Herald
        do {
            let state = Bridge.stateName(hostID: hostID)
            herald = try await Herald.connect(
                socketPath: options.socketPath,
                options: Herald.Options(
                    clientName: "herald-mqtt-bridge",
                    logger: .standardError(label: "herald-mqtt-bridge", level: options.verbose ? .debug : .info),
                    reconnects: true,
                    will: Herald.Will(name: state, userInfo: ["connected": false], retain: true)
                )
            )
        } catch {
            logger.error("\(error)")
            return error.code == .daemonUnavailable ? 69 : 1
        }
        let bridge: Bridge
        do {
            bridge = try Bridge(options: options, herald: herald, hostID: hostID, password: password, logger: logger)
        } catch {
            logger.error("\(error)")
            return 64
        }
        logger.notice("bridging \(Bridge.stateName(hostID: hostID)) to mqtt://\(options.host):\(options.port)")
        // The loop runs on the Herald reader thread, where the exported notifications arrive: a batch reaches the
        // loop with no thread hand-off at all. It never blocks that thread on anything only the reader delivers
        // (GET is awaited, which gives the thread back; heraldd reads posts whatever it has queued for us).
        await withTaskExecutorPreference(herald.taskExecutor) { await bridge.run() }
        return 1
    }
}
