import Foundation
public import HeraldLaunch

/// A real private D-Bus bus: `dbus-daemon --session` listening on a socket in a test's directory, killed when the
/// value is released.
public final class SessionBus: Sendable {
    /// The bus address, for `DBUS_SESSION_BUS_ADDRESS`.
    public let address: String
    /// The bus's socket file.
    public let socketPath: String
    /// The dbus-daemon process.
    public let process: ChildProcess

    /// Starts dbus-daemon on `socketPath` and returns once it has printed its address (it listens by then).
    ///
    /// - Throws: `SessionTools.Missing`, or `ChildProcess.Timeout`.
    public static func start(socketPath: String) async throws -> SessionBus {
        // A dbus-daemon killed earlier may have left its socket behind; bind would fail on it.
        try? FileManager.default.removeItem(atPath: socketPath)
        let process = try ChildProcess(
            try SessionTools.path("dbus-daemon"),
            ["--session", "--nofork", "--nopidfile", "--print-address=1", "--address=unix:path=\(socketPath)"]
        )
        let line = try await process.waitForStdoutLine(containing: "unix:path=")
        return SessionBus(address: line.trimmingCharacters(in: .whitespaces), socketPath: socketPath, process: process)
    }

    private init(address: String, socketPath: String, process: ChildProcess) {
        self.address = address
        self.socketPath = socketPath
        self.process = process
    }

    /// Emits a signal on this bus with `gdbus emit`, and returns once gdbus has handed it to the bus.
    ///
    /// - Parameters:
    ///   - system: emit through `--system` (with `DBUS_SYSTEM_BUS_ADDRESS` pointing here) rather than `--session`.
    ///   - objectPath: e.g. `/org/freedesktop/ScreenSaver`.
    ///   - signal: interface and member, e.g. `org.freedesktop.ScreenSaver.ActiveChanged`.
    ///   - arguments: the signal's arguments in GVariant text, e.g. `true`.
    public func emit(system: Bool = false, objectPath: String, signal: String, _ arguments: [String] = []) async throws
    {
        let result = try await SessionTools.run(
            "gdbus",
            ["emit", system ? "--system" : "--session", "--object-path", objectPath, "--signal", signal] + arguments,
            environment: ["DBUS_SESSION_BUS_ADDRESS": address, "DBUS_SYSTEM_BUS_ADDRESS": address]
        )
        guard result.status == 0 else {
            throw SessionTools.Missing(description: "gdbus emit \(signal) failed (\(result.status)): \(result.stderr)")
        }
    }

    /// Stops the bus with SIGKILL and waits for it to exit.
    ///
    /// SIGKILL, not SIGTERM: Foundation's Process may start a child with the spawning thread's signal mask, in which
    /// SIGTERM can be blocked.
    public func stop() async throws {
        process.signal(SIGKILL)
        try await process.waitForExit(timeout: .seconds(10))
    }

    deinit {
        process.signal(SIGKILL)
    }
}
