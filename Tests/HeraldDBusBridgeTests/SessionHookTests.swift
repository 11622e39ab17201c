import Foundation
import HeraldDBus
import HeraldLaunch
import HeraldTestSupport
import Testing

/// herald-session-hook lock|unlock beside the bridge, for a locker that tells no one (swaylock).
@Suite(.serialized, .requiresDesktopBed, .requires("sh"))
struct SessionHookBesideTheBridgeTests {
    func hook(_ bed: DesktopBed, _ command: String) async throws {
        let result = try await SessionTools.run(
            "sh",
            [SessionTools.contrib("session/herald-session-hook"), command],
            environment: [
                "HERALD": TestBinaries.path("herald"), "HERALD_SOCKET": bed.daemon.socketPath, "USER": "alice",
            ]
        )
        #expect(result.status == 0, "\(result.stderr)")
    }

    @Test func theHooksLockHoldsTheSessionAwayWhileAScreenSaverComesAndGoes() async throws {
        let bed = try await DesktopBed.start()
        try await bed.startLogind()
        try await bed.startUPower(onBattery: false, percentage: 90)
        let saver = ("org.gnome.ScreenSaver", "/org/gnome/ScreenSaver", "org.gnome.ScreenSaver")
        try await bed.startScreenSaver(saver.0, saver.1, saver.2)
        let bridge = try await bed.startBridge()
        try await hook(bed, "lock")
        try await bridge.waitForStderrLine(containing: "session.state away was announced by another process")
        try await bed.emit(.session, saver.0, saver.1, saver.2, "ActiveChanged", "b", [.boolean(true)])
        try await bed.emit(.session, saver.0, saver.1, saver.2, "ActiveChanged", "b", [.boolean(false)])
        try await bed.marker(89)
        // Only the hook's announcement: the bridge neither repeats it nor ends it when the screen saver stops.
        #expect(bed.posts("session.willResignActive").count == 1)
        #expect(bed.posts("session.didBecomeActive").isEmpty)
        #expect(try await bed.retained("session.state")?["state"] == .string("away"))
        try await hook(bed, "unlock")
        #expect(try await bed.waitForPosts("session.didBecomeActive", count: 1))
        try await bridge.waitForStderrLine(containing: "session.state active was announced by another process")
        // And the bridge's own sources count again.
        try await bed.setSession(["LockedHint": .boolean(true)])
        #expect(try await bed.waitForPosts("session.willResignActive", count: 2))
        await bed.stop()
    }
}
