import Foundation
import Herald
import HeraldDBus
import HeraldTestSupport
import Testing

/// Locking, end to end: LockedHint, the five screen-saver interfaces, logind's Lock requests.
@Suite(.serialized, .requiresDesktopBed)
struct LockTests {
    /// The five screen savers: bus name, object path, interface.
    static let screenSavers = [
        ("org.freedesktop.ScreenSaver", "/org/freedesktop/ScreenSaver", "org.freedesktop.ScreenSaver"),
        ("org.gnome.ScreenSaver", "/org/gnome/ScreenSaver", "org.gnome.ScreenSaver"),
        ("org.kde.screensaver", "/ScreenSaver", "org.freedesktop.ScreenSaver"),
        ("org.mate.ScreenSaver", "/org/mate/ScreenSaver", "org.mate.ScreenSaver"),
        ("org.cinnamon.ScreenSaver", "/org/cinnamon/ScreenSaver", "org.cinnamon.ScreenSaver"),
    ]

    @Test func eachOfTheFiveScreenSaversMakesTheSessionAwayAndBack() async throws {
        let bed = try await DesktopBed.start()
        try await bed.startLogind()
        try await bed.startUPower(onBattery: false, percentage: 90)
        for (name, path, interface) in Self.screenSavers {
            try await bed.startScreenSaver(name, path, interface)
        }
        _ = try await bed.startBridge()
        for (index, (name, path, interface)) in Self.screenSavers.enumerated() {
            try await bed.emit(.session, name, path, interface, "ActiveChanged", "b", [.boolean(true)])
            #expect(try await bed.waitForPosts("session.willResignActive", count: index + 1), "\(name)")
            // Repeated, as GNOME does: nothing more.
            try await bed.emit(.session, name, path, interface, "ActiveChanged", "b", [.boolean(true)])
            try await bed.emit(.session, name, path, interface, "ActiveChanged", "b", [.boolean(false)])
            #expect(try await bed.waitForPosts("session.didBecomeActive", count: index + 1), "\(name)")
            #expect(bed.posts("session.willResignActive").last?["reason"] == .string("screensaver"))
        }
        try await bed.marker(89)
        #expect(bed.posts("session.willResignActive").count == 5)
        #expect(bed.posts("session.didBecomeActive").count == 5)
        #expect(bed.posts("session.state").count == 10)
        await bed.stop()
    }

    @Test func aLockRequestAnsweredByLockedHintGoesAwayAndOneNobodyAnswersDoesNot() async throws {
        let bed = try await DesktopBed.start()
        try await bed.startLogind()
        try await bed.startUPower(onBattery: false, percentage: 90)
        let bridge = try await bed.startBridge()
        let login = "org.freedesktop.login1"
        let session = "org.freedesktop.login1.Session"
        // logind's Lock, then the locker's answer.
        try await bed.emit(.system, login, DesktopBed.sessionPath, session, "Lock", "", [])
        try await bridge.waitForStderrLine(containing: "waiting for the locker's answer")
        #expect(bed.posts("session.willResignActive").isEmpty)
        try await bed.setSession(["LockedHint": .boolean(true)])
        #expect(try await bed.waitForPosts("session.willResignActive", count: 1))
        #expect(try await bed.retained("session.state")?["locked"] == .bool(true))
        try await bed.emit(.system, login, DesktopBed.sessionPath, session, "Unlock", "", [])
        try await bed.setSession(["LockedHint": .boolean(false)])
        #expect(try await bed.waitForPosts("session.didBecomeActive", count: 1))

        // A Lock that no locker answers: after --lock-timeout (1 s here) it is forgotten and said once.
        try await bed.emit(.system, login, DesktopBed.sessionPath, session, "Lock", "", [])
        try await bridge.waitForStderrLine(containing: "no locker set LockedHint")
        #expect(try await bed.waitForRetained("bridge.dbus", "unansweredLockRequests", .number(1)))
        try await bed.marker(88)
        #expect(bed.posts("session.willResignActive").count == 1)
        #expect(try await bed.retained("session.state")?["state"] == .string("active"))
        await bed.stop()
    }
}
