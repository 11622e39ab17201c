import HeraldDBus
import HeraldDesktop
import Testing

/// The sources other than the lock, event by event.
struct SourceTests {
    @Test func sleepPostsTheStateThenTheTransitionAndAskForARereadOnWake() {
        var sleep = SystemSleep()
        let start = sleep.managerPropertiesChanged(["PreparingForSleep": .boolean(false)])
        #expect(start.update.posts == [DesktopPost("system.sleep", ["sleeping": .bool(false)], retain: true)])
        let down = sleep.prepareForSleep(true)
        #expect(down.update.posts.map(\.name) == ["system.sleep", "system.willSleep"])
        #expect(!down.rereadAll)
        #expect(sleep.prepareForSleep(true).update.posts.isEmpty)
        let up = sleep.prepareForSleep(false)
        #expect(up.update.posts.map(\.name) == ["system.sleep", "system.didWake"])
        #expect(up.rereadAll)
        #expect(sleep.prepareForSleep(false).update.posts.isEmpty)
    }

    @Test func idlePostsWhenItsPayloadChangesWithTheTimeFromIdleSinceHint() {
        var idle = SessionIdle()
        #expect(idle.sessionPropertiesChanged(["LockedHint": .boolean(true)]).posts.isEmpty)
        let first = idle.sessionPropertiesChanged(["IdleHint": .boolean(false), "IdleSinceHint": .uint64(0)])
        #expect(first.posts == [DesktopPost("session.idle", ["idle": .bool(false), "since": .null], retain: true)])
        let idleNow = idle.sessionPropertiesChanged([
            "IdleHint": .boolean(true), "IdleSinceHint": .uint64(1_795_000_000_000_000),
        ])
        #expect(idleNow.posts.first?.payload?["since"] == .string("2026-11-18T11:06:40Z"))
        #expect(
            idle.sessionPropertiesChanged(["IdleHint": .boolean(true), "IdleSinceHint": .uint64(1_795_000_000_000_000)])
                .posts.isEmpty
        )
        #expect(idle.serviceLeft().posts == [DesktopPost("session.idle", nil, retain: true)])
    }

    @Test func batteryCombinesTheDisplayDeviceAndOnBatteryAndRefusesWrongTypes() {
        var battery = Battery()
        let read = battery.read(
            manager: ["OnBattery": .boolean(true)],
            device: ["Percentage": .double(42), "State": .uint32(2), "TimeToEmpty": .int64(3600)]
        )
        #expect(
            read.posts == [
                DesktopPost(
                    "power.battery",
                    [
                        "percentage": .number(42), "state": .string("discharging"), "onBattery": .bool(true),
                        "timeToEmpty": .number(3600),
                    ],
                    retain: true
                )
            ]
        )
        #expect(battery.displayDeviceChanged(["Percentage": .double(42)]).posts.isEmpty)
        let wrong = battery.displayDeviceChanged(["Percentage": .string("lots"), "State": .uint32(1)])
        #expect(wrong.refusals == ["org.freedesktop.UPower.Device.Percentage must be 'd', not 's'"])
        #expect(wrong.posts.first?.payload?["percentage"] == .number(42))
        #expect(wrong.posts.first?.payload?["state"] == .string("charging"))
        #expect(battery.serviceLeft().posts == [DesktopPost("power.battery", nil, retain: true)])
        #expect(battery.serviceLeft().posts.isEmpty)
    }

    @Test func networkPostsOnceForStateChangedAndPropertiesChangedOfOneChange() {
        var network = Network()
        let start = network.propertiesChanged(["State": .uint32(70), "Connectivity": .uint32(4)])
        #expect(start.posts.first?.payload == ["state": .string("connected-global"), "connectivity": .string("full")])
        #expect(network.stateChanged([.uint32(20)]).posts.count == 1)
        #expect(network.propertiesChanged(["State": .uint32(20)]).posts.isEmpty)
        #expect(network.stateChanged([.string("x")]).refusals.count == 1)
    }

    @Test(arguments: [
        ("org.mpris.MediaPlayer2.vlc", "media.player.vlc"),
        ("org.mpris.MediaPlayer2.vlc.instance42", "media.player.vlc_instance42"),
        ("org.mpris.MediaPlayer2.firefox.instance_1_23", "media.player.firefox_instance_1_23"),
        ("org.mpris.MediaPlayer2.", nil),
        ("org.example.Other", nil),
    ])
    func playerNamesBecomeOneSegment(busName: String, name: String?) {
        #expect(MediaPlayers.heraldName(of: busName) == name)
    }

    @Test func playersArePostedClearedAndBounded() {
        var players = MediaPlayers(maximumPlayers: 2)
        let playing = players.playerChanged(
            "org.mpris.MediaPlayer2.a",
            [
                "PlaybackStatus": .string("Playing"),
                "Metadata": .dictionary(
                    key: .string,
                    value: .variant,
                    [
                        (.string("xesam:title"), .variant(.string("Song"))),
                        (.string("xesam:artist"), .variant(.array(.string, [.string("A"), .string("B")]))),
                    ]
                ),
            ]
        )
        #expect(
            playing.posts == [
                DesktopPost(
                    "media.player.a",
                    ["status": .string("Playing"), "title": .string("Song"), "artist": .string("A, B")],
                    retain: true
                )
            ]
        )
        #expect(players.playerChanged("org.mpris.MediaPlayer2.a", ["PlaybackStatus": .string("Playing")]).posts.isEmpty)
        #expect(players.playerChanged("org.mpris.MediaPlayer2.a", ["PlaybackStatus": .int32(1)]).refusals.count == 1)
        _ = players.playerChanged("org.mpris.MediaPlayer2.b", [:])
        #expect(players.playerChanged("org.mpris.MediaPlayer2.c", [:]).refusals.count == 1)
        #expect(
            players.playerLeft("org.mpris.MediaPlayer2.a").posts == [DesktopPost("media.player.a", nil, retain: true)]
        )
    }

    @Test func aNotifyDesktopPayloadBecomesNotifysArguments() throws {
        let notification = try DesktopNotification(
            .object([
                "summary": .string("build done"), "body": .string("all green"), "urgency": .string("critical"),
                "actions": .object(["default": .string("Open")]),
            ])
        )
        let arguments = notification.notifyArguments(appName: "herald")
        #expect(arguments.count == 8)
        #expect(arguments[3] == .string("build done"))
        #expect(arguments[5] == .array(.string, [.string("default"), .string("Open")]))
        #expect(arguments[6].stringDictionary?["urgency"] == .variant(.byte(2)))
        #expect(arguments[7] == .int32(-1))
    }

    @Test(arguments: [
        DBusJSON.string("x"), .object([:]), .object(["summary": .string("")]),
        .object(["summary": .string("s"), "urgency": .string("urgent")]),
        .object(["summary": .string("s"), "actions": .array([.string("only a key")])]),
        .object(["summary": .string(String(repeating: "x", count: 5000))]),
    ])
    func aMalformedNotifyDesktopIsRefused(payload: DBusJSON) {
        #expect(throws: DBusError.self) { try DesktopNotification(payload) }
    }

    @Test func actionsAndClosingBecomePostsWithTheID() {
        #expect(
            DesktopNotification.actionInvoked([.uint32(7), .string("default")])
                == DesktopPost(
                    "notify.desktop.action",
                    ["id": .number(7), "action": .string("default")],
                    retain: false
                )
        )
        #expect(DesktopNotification.closed([.uint32(7), .uint32(1)])?.payload?["reason"] == .string("expired"))
        #expect(DesktopNotification.actionInvoked([.string("7")]) == nil)
    }

    @Test(arguments: [
        (Int64(0), "1970-01-01T00:00:00Z"), (Int64(951_782_400), "2000-02-29T00:00:00Z"),
        (Int64(1_795_000_000), "2026-11-18T11:06:40Z"), (Int64(4_102_444_799), "2099-12-31T23:59:59Z"),
    ])
    func isoTimesAreUTC(seconds: Int64, text: String) {
        #expect(ISOTime.string(seconds: seconds) == text)
    }
}
