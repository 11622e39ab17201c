import Foundation

/// The system tools the desktop-integration tests run for real (systemd-socket-activate, dbus-daemon, gdbus,
/// groff, the shells). `.ci/run` installs them with contrib/ci/install-test-tools.sh; a missing one fails the test
/// with that hint rather than skipping it.
public enum SessionTools {
    /// Raised when a tool is not installed.
    public struct Missing: Error, CustomStringConvertible {
        public var description: String
    }

    /// The absolute path of `name` in `$PATH` (plus the usual system directories).
    ///
    /// - Throws: `Missing` naming the install script.
    public static func path(_ name: String) throws -> String {
        let search =
            (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init)
            + ["/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin"]
        for directory in search where !directory.isEmpty {
            let candidate = directory + "/" + name
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        throw Missing(
            description: "\(name) is not installed: run 'sh contrib/ci/install-test-tools.sh' (as .ci/run does)"
        )
    }

    /// The repository's root, found from this source file's path.
    public static let repositoryRoot: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url.path
    }()

    /// A file under contrib/.
    public static func contrib(_ relativePath: String) -> String {
        repositoryRoot + "/contrib/" + relativePath
    }

    /// Runs the system tool `name` to completion with a deadline.
    ///
    /// - Throws: `Missing`, or `ChildProcess.Timeout` if it runs past `timeout`.
    public static func run(
        _ name: String,
        _ arguments: [String],
        environment: [String: String?] = [:],
        timeout: Duration = .seconds(20)
    ) async throws -> CommandResult {
        let process = try ChildProcess(try path(name), arguments, environment: environment)
        process.closeStdin()
        let status = try await process.waitForExit(timeout: timeout)
        return CommandResult(status: status, stdout: process.stdout, stderr: process.stderr)
    }
}
