import Foundation
import HeraldLaunch
import HeraldTestSupport
import Testing

/// python-dbusmock, run as `python3 -m dbusmock` on a private bus.
enum DBusMock {
    /// Whether the `python3` in `$PATH` can import dbusmock (the Debian package python3-dbusmock).
    static let available: Bool = {
        guard let python = SessionTools.find("python3") else { return false }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = ["-c", "import dbusmock"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return false }
        process.waitUntilExit()
        return process.terminationStatus == 0
    }()

    /// Starts `python3 -m dbusmock --session` with `arguments` on the bus at `address`.
    static func start(_ arguments: [String], address: String) throws -> ChildProcess {
        try ChildProcess(
            try SessionTools.path("python3"),
            ["-m", "dbusmock", "--session"] + arguments,
            environment: ["DBUS_SESSION_BUS_ADDRESS": address, "DBUS_SYSTEM_BUS_ADDRESS": address]
        )
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
