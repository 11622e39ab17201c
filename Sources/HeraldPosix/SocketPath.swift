#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where the daemon's socket lives: the one rule shared by the daemon, the client library and the CLI.
public enum SocketPath {
    /// The environment variable that overrides the socket path.
    public static let environmentVariable = "HERALD_SOCKET"

    /// Resolves the socket path from its inputs, with no side effects.
    ///
    /// The first that applies wins:
    /// 1. `explicit`, if it is neither nil nor empty (a `--socket` option);
    /// 2. `$HERALD_SOCKET`, if set and non-empty;
    /// 3. `$XDG_RUNTIME_DIR/herald/socket`, if `XDG_RUNTIME_DIR` is set and non-empty;
    /// 4. `/tmp/herald-<uid>/socket`.
    ///
    /// - Parameters:
    ///   - explicit: a path the user gave on the command line, or nil.
    ///   - environment: the environment variables to consult.
    ///   - uid: the user ID for the fallback path.
    /// - Returns: the socket path.
    public static func resolve(explicit: String?, environment: [String: String], uid: UInt32) -> String {
        if let explicit, !explicit.isEmpty {
            return explicit
        }
        if let override = environment[environmentVariable], !override.isEmpty {
            return override
        }
        if let runtimeDirectory = environment["XDG_RUNTIME_DIR"], !runtimeDirectory.isEmpty {
            return "\(runtimeDirectory)/herald/socket"
        }
        return "/tmp/herald-\(uid)/socket"
    }

    /// Resolves the socket path from this process's environment and real user ID; see
    /// ``resolve(explicit:environment:uid:)`` for the rule.
    ///
    /// - Parameter explicit: a path the user gave on the command line, or nil.
    /// - Returns: the socket path.
    public static func resolve(explicit: String?) -> String {
        var environment: [String: String] = [:]
        for name in [environmentVariable, "XDG_RUNTIME_DIR"] {
            if let value = getenv(name) {
                environment[name] = String(cString: value)
            }
        }
        return resolve(explicit: explicit, environment: environment, uid: ProcessIdentity.currentUID())
    }
}
