import Foundation
import Herald
import HeraldDBus
import HeraldTestSupport
import Testing

/// notify.desktop out to the notification server, its signals back.
@Suite(.serialized, .requiresDesktopBed)
struct NotificationTests {
    @Test func aPostToNotifyDesktopIsShownAndItsActionAndClosingComeBack() async throws {
        let bed = try await DesktopBed.start()
        try await bed.startNotifications()
        let bridge = try await bed.startBridge()
        try await bridge.waitForStderrLine(containing: "showing the posts to notify.desktop")
        let result = try await run(
            "herald",
            [
                "post", "--socket", bed.daemon.socketPath, "notify.desktop", "summary=build done", "body=all green",
                "urgency=critical",
            ]
        )
        #expect(result.status == 0, "\(result.stderr)")
        let notifications = "org.freedesktop.Notifications"
        var notify: [DBusValue] = []
        let called = try await eventually {
            let calls = try await bed.mockCall(
                .session,
                notifications,
                "/org/freedesktop/Notifications",
                "GetCalls",
                []
            )
            guard case .array(_, let entries)? = calls.first else { return false }
            for case .structure(let fields) in entries where fields.count == 3 && fields[1].stringValue == "Notify" {
                if case .array(_, let arguments) = fields[2] { notify = arguments.map(\.unwrapped) }
            }
            return !notify.isEmpty
        }
        #expect(called)
        #expect(notify.count == 8)
        #expect(notify[3] == .string("build done"))
        #expect(notify[4] == .string("all green"))
        #expect(notify[6].stringDictionary?["urgency"]?.unwrapped == .byte(2))

        // The mock numbers its notifications from 1.
        try await bed.emit(
            .session,
            notifications,
            "/org/freedesktop/Notifications",
            notifications,
            "ActionInvoked",
            "us",
            [.uint32(1), .string("default")]
        )
        #expect(try await bed.waitForPosts("notify.desktop.action", count: 1))
        #expect(bed.posts("notify.desktop.action").first == ["id": .number(1), "action": .string("default")])
        try await bed.emit(
            .session,
            notifications,
            "/org/freedesktop/Notifications",
            notifications,
            "NotificationClosed",
            "uu",
            [.uint32(1), .uint32(2)]
        )
        #expect(try await bed.waitForPosts("notify.desktop.closed", count: 1))
        #expect(bed.posts("notify.desktop.closed").first == ["id": .number(1), "reason": .string("dismissed")])
        // Another application's notification is not the bridge's to report.
        try await bed.emit(
            .session,
            notifications,
            "/org/freedesktop/Notifications",
            notifications,
            "ActionInvoked",
            "us",
            [.uint32(77), .string("x")]
        )
        // No other method was called because of the post.
        let calls = try await bed.mockCall(.session, notifications, "/org/freedesktop/Notifications", "GetCalls", [])
        if case .array(_, let entries)? = calls.first {
            let methods = entries.compactMap { entry -> String? in
                guard case .structure(let fields) = entry else { return nil }
                return fields[1].stringValue
            }
            #expect(methods == ["Notify"], "\(methods)")
        }
        await bed.stop()
    }

    @Test func aMalformedNotifyDesktopIsRefusedWithALogLine() async throws {
        let bed = try await DesktopBed.start()
        try await bed.startNotifications()
        let bridge = try await bed.startBridge()
        try await bridge.waitForStderrLine(containing: "showing the posts to notify.desktop")
        _ = try await run("herald", ["post", "--socket", bed.daemon.socketPath, "notify.desktop", "body=no summary"])
        try await bridge.waitForStderrLine(containing: "\"summary\" must be a non-empty string")
        await bed.stop()
    }
}
