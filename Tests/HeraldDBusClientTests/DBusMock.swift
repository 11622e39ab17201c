import Foundation
import HeraldLaunch
import HeraldTestSupport
import Testing

/// python-dbusmock, run as `python3 -m dbusmock` on a private bus.
enum DBusMock {
    /// The interpreter that can import dbusmock (``SessionTools/dbusmockPython``).
    static var python: String? { SessionTools.dbusmockPython }

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
