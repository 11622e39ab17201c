import Herald
import HeraldCommandLine

/// Connecting to heraldd the way every subcommand does.
enum Daemon {
    /// The label the daemon shows for `herald`'s connections in its logs.
    static let clientName = "herald"

    /// The socket path a subcommand uses: `--socket`, else the environment, as the daemon resolves it.
    static func socketPath(explicit: String?) -> String {
        guard let explicit, !explicit.isEmpty else { return Herald.defaultSocketPath }
        return explicit
    }

    /// Connects to the daemon, runs `body` with the connection, and closes it whether `body` succeeds or fails.
    ///
    /// - Parameters:
    ///   - socket: The `--socket` value, or `nil` to resolve the path from the environment.
    ///   - body: The work to do on the connection.
    /// - Throws: `CommandFailure` for a daemon that can't be reached (exit 69), or whatever `body` throws.
    ///   - reconnects: Whether the connection comes back by itself after heraldd restarts (`observe --reconnect`);
    ///     otherwise the daemon going away ends the command with 69.
    ///   - will: A last will for heraldd to post if this process dies without closing the connection.
    static func withConnection<Result: Sendable>(
        socket: String?,
        reconnects: Bool = false,
        will: Herald.Will? = nil,
        _ body: (Herald) async throws(CommandFailure) -> Result
    ) async throws(CommandFailure) -> Result {
        let herald: Herald
        do throws(HeraldError) {
            herald = try await Herald.connect(
                socketPath: socketPath(explicit: socket),
                options: Herald.Options(
                    clientName: clientName,
                    // What goes wrong while reconnecting has no caller to throw to: a warning on stderr says it.
                    logger: reconnects ? .standardError(label: "herald", level: .warning) : nil,
                    reconnects: reconnects,
                    will: will
                )
            )
        } catch {
            throw CommandFailure(error)
        }
        Interruption.track(herald)
        defer { Interruption.track(nil) }
        do throws(CommandFailure) {
            let result = try await body(herald)
            await herald.close()
            return result
        } catch {
            await herald.close()
            throw error
        }
    }

    /// Connects, asks the daemon one thing with `request`, and closes: `withConnection` for the subcommands whose
    /// only failures on the connection are the library's, which become the command's failure as
    /// `CommandFailure(_:)` maps them.
    static func ask<Result: Sendable>(
        socket: String?,
        _ request: (Herald) async throws(HeraldError) -> Result
    ) async throws(CommandFailure) -> Result {
        try await withConnection(socket: socket) { herald throws(CommandFailure) in
            do throws(HeraldError) {
                return try await request(herald)
            } catch {
                throw CommandFailure(error)
            }
        }
    }
}
