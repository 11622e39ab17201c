import Foundation
import Herald
import HeraldCommandLine
import HeraldPosix

/// `herald-mqtt-bridge`: parses the command line, connects to heraldd, and runs the bridge.
public enum BridgeMain {
    /// Runs the bridge; returns the exit status (64 for a usage error, 69 when the daemon is unavailable, 1 for
    /// anything else that stops it).
    public static func run(arguments: [String]) async -> Int32 {
        // --help and --version end the process with 0 and a usage error with 64, as in every Herald executable.
        let options = BridgeOptions.spec.parseOrExit(arguments, version: BridgeOptions.version) {
            parsed throws(UsageError) in try BridgeOptions(parsed)
        }
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
