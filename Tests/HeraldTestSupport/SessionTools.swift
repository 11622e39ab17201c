import Foundation
import HeraldLaunch
import Synchronization
public import Testing

/// The system tools the desktop-integration tests run for real (systemd-socket-activate, dbus-daemon, gdbus,
/// groff, the shells).
///
/// A test that needs some carries the trait `.requires("zsh")`: on a machine without the tool it is skipped, and
/// Swift Testing prints the skip with the reason. `.ci/run` installs the tools with contrib/ci/install-test-tools.sh
/// and sets `HERALD_REQUIRE_TEST_TOOLS=1`, which turns every such skip into a failure, so CI always runs them.
public enum SessionTools {
    /// Raised when a tool is not installed.
    public struct Missing: Error, CustomStringConvertible {
        public var description: String
    }

    /// Whether `HERALD_REQUIRE_TEST_TOOLS=1` is set: then a missing tool fails its tests instead of skipping them.
    public static let required = ProcessInfo.processInfo.environment["HERALD_REQUIRE_TEST_TOOLS"] == "1"

    /// The interpreter that can import python-dbusmock: the `python3` in `$PATH`, or else the system's
    /// `/usr/bin/python3`, for which the Debian package python3-dbusmock installs it (a pyenv or venv python3 earlier
    /// in `$PATH` does not see the system's packages). Asked once per test process; nil when neither can.
    public static let dbusmockPython: String? = {
        for candidate in [find("python3"), "/usr/bin/python3"].compactMap({ $0 }) {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: candidate)
            process.arguments = ["-c", "import dbusmock"]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            guard (try? process.run()) != nil else { continue }
            process.waitUntilExit()
            if process.terminationStatus == 0 { return candidate }
        }
        return nil
    }()

    /// The absolute path of `name` in `$PATH`, or nil.
    ///
    /// Only `$PATH` is searched, so a narrowed `PATH` hides a tool as a machine without it would.
    public static func find(_ name: String) -> String? {
        let search = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init)
        for directory in search where !directory.isEmpty {
            let candidate = directory + "/" + name
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

    /// The absolute path of `name` in `$PATH`.
    ///
    /// - Throws: `Missing` naming the install script.
    public static func path(_ name: String) throws -> String {
        if let path = find(name) { return path }
        throw Missing(description: "\(name) is not installed: \(installHint)")
    }

    static let installHint = "run 'sh contrib/ci/install-test-tools.sh' (as .ci/run does)"

    /// The tools among `names` that are not in `$PATH`.
    public static func missing(_ names: [String]) -> [String] {
        names.filter { find($0) == nil }
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

extension Trait where Self == ConditionTrait {
    /// Runs the test only where every tool in `tools` is installed; elsewhere Swift Testing skips it and prints which
    /// tools are missing and how to install them, and the run ends with a count of such skips. With
    /// `HERALD_REQUIRE_TEST_TOOLS=1` the test always runs, so a missing tool fails it (`SessionTools.path` throws
    /// `Missing`).
    ///
    /// - Parameter tools: The commands the test runs, looked up in `$PATH`.
    public static func requires(_ tools: String...) -> ConditionTrait {
        let missing = SessionTools.missing(tools)
        let reason =
            "needs \(missing.joined(separator: ", ")), not installed: \(SessionTools.installHint), "
            + "or set HERALD_REQUIRE_TEST_TOOLS=1 to make this a failure"
        // Swift Testing evaluates the condition only for the tests it is about to run, so this counts real skips.
        return .enabled(if: SessionTools.recordRun(missing: missing), Comment(rawValue: reason))
    }
}

extension SessionTools {
    /// The tests skipped so far, and how many of them needed each missing tool.
    private static let skips = Mutex<(tests: Int, byTool: [String: Int])>((0, [:]))

    /// Whether a test that needs tools of which `missing` are not installed runs; counts it as skipped if not, and
    /// arranges for the count to be printed when the test process exits.
    static func recordRun(missing: [String]) -> Bool {
        if missing.isEmpty || required { return true }
        let first = skips.withLock { skips in
            defer {
                skips.tests += 1
                for tool in missing { skips.byTool[tool, default: 0] += 1 }
            }
            return skips.tests == 0
        }
        if first {
            atexit {
                let (tests, byTool) = SessionTools.skips.withLock { $0 }
                let tools = byTool.keys.sorted().map { "\($0) (\(byTool[$0]!))" }.joined(separator: ", ")
                print(
                    "\(tests) tests skipped, needing a tool that is not installed: \(tools). "
                        + "To run them: \(SessionTools.installHint)."
                )
            }
        }
        return false
    }
}
