import Foundation
import HeraldLaunch
import HeraldTestSupport
import Testing

/// python-dbusmock, run as `python3 -m dbusmock` on a private bus.
enum DBusMock {
    /// The interpreter that can import dbusmock: the `python3` in `$PATH`, or else the system's `/usr/bin/python3`,
    /// for which the Debian package python3-dbusmock installs it (a pyenv or venv python3 earlier in `$PATH` does not
    /// see the system's packages).
    static let python: String? = {
        for candidate in [SessionTools.find("python3"), "/usr/bin/python3"].compactMap({ $0 }) {
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

    /// Whether a python3 that can import dbusmock is installed.
    static var available: Bool { python != nil }

    /// Starts `python3 -m dbusmock --session` with `arguments` on the bus at `address`.
    static func start(_ arguments: [String], address: String) throws -> ChildProcess {
        guard let python else {
            throw MissingDBusMock()
        }
        return try ChildProcess(
            python,
            ["-m", "dbusmock", "--session"] + arguments,
            environment: ["DBUS_SESSION_BUS_ADDRESS": address, "DBUS_SYSTEM_BUS_ADDRESS": address]
        )
    }
}

/// Raised when no python3 can import dbusmock.
struct MissingDBusMock: Error, CustomStringConvertible {
    var description: String {
        "no python3 can import dbusmock: run 'sh contrib/ci/install-test-tools.sh' (it installs python3-dbusmock)"
    }
}

extension Trait where Self == ConditionTrait {
    /// Runs the test only where python3 can import dbusmock; elsewhere it is skipped with the reason, and with
    /// `HERALD_REQUIRE_TEST_TOOLS=1` it runs (and fails).
    static var requiresDBusMock: ConditionTrait {
        .enabled(
            if: DBusMock.available || SessionTools.required,
            "needs python3 with dbusmock (python3-dbusmock): run 'sh contrib/ci/install-test-tools.sh'"
        )
    }
}
