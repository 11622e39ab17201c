import HeraldDBus
import HeraldDesktop
import Testing

struct SessionLockTests {
    private func names(_ output: SessionLock.Output) -> [String] { output.update.posts.map(\.name) }

    @Test func startPostsTheRetainedStateAloneBeforeAnyChange() {
        var lock = SessionLock(user: "alice")
        // The first reading: a screen saver found absent, then logind's LockedHint.
        #expect(names(lock.screenSaverLeft("a /a", at: "T0")).isEmpty)
        #expect(names(lock.sessionPropertiesChanged(["LockedHint": .boolean(true)], at: "T0")).isEmpty)
        let output = lock.start(at: "T1")
        #expect(names(output) == ["session.state"])
        #expect(output.update.posts[0].payload?["state"] == .string("away"))
        #expect(output.update.posts[0].payload?["reason"] == .string("start"))
        #expect(output.update.posts[0].retain)
        #expect(names(lock.start(at: "T2")).isEmpty)
    }

    @Test func lockedHintGivesOneStateAndOneResignAndARepeatGivesNothing() {
        var lock = SessionLock(user: "alice")
        _ = lock.start(at: "T0")
        let locked = lock.sessionPropertiesChanged(["LockedHint": .boolean(true)], at: "T1")
        #expect(names(locked) == ["session.state", "session.willResignActive"])
        #expect(locked.update.posts[1].payload == ["user": .string("alice"), "reason": .string("lock")])
        #expect(locked.update.posts[0].payload?["since"] == .string("T1"))
        #expect(names(lock.sessionPropertiesChanged(["LockedHint": .boolean(true)], at: "T2")).isEmpty)
        let unlocked = lock.sessionPropertiesChanged(["LockedHint": .boolean(false)], at: "T3")
        #expect(names(unlocked) == ["session.state", "session.didBecomeActive"])
        #expect(unlocked.update.posts[1].payload?["reason"] == .string("unlock"))
    }

    @Test(arguments: [
        "org.freedesktop.ScreenSaver /org/freedesktop/ScreenSaver", "org.gnome.ScreenSaver /org/gnome/ScreenSaver",
        "org.freedesktop.ScreenSaver /ScreenSaver", "org.mate.ScreenSaver /org/mate/ScreenSaver",
        "org.cinnamon.ScreenSaver /org/cinnamon/ScreenSaver",
    ])
    func eachScreenSaverMakesTheSessionAway(key: String) {
        var lock = SessionLock(user: "alice")
        _ = lock.start(at: "T0")
        #expect(
            names(lock.screenSaverChanged(key, active: true, at: "T1")) == [
                "session.state", "session.willResignActive",
            ]
        )
        #expect(names(lock.screenSaverChanged(key, active: true, at: "T2")).isEmpty)
        #expect(
            names(lock.screenSaverChanged(key, active: false, at: "T3")) == [
                "session.state", "session.didBecomeActive",
            ]
        )
    }

    @Test func twoScreenSaversKeepTheSessionAwayUntilBothStop() {
        var lock = SessionLock(user: "alice")
        _ = lock.start(at: "T0")
        _ = lock.screenSaverChanged("a /a", active: true, at: "T1")
        #expect(names(lock.screenSaverChanged("b /b", active: true, at: "T2")).isEmpty)
        #expect(names(lock.screenSaverChanged("a /a", active: false, at: "T3")).isEmpty)
        #expect(names(lock.screenSaverLeft("b /b", at: "T4")) == ["session.state", "session.didBecomeActive"])
    }

    @Test func aLockRequestPostsNothingAndTheLockersAnswerDecides() {
        var lock = SessionLock(user: "alice")
        _ = lock.start(at: "T0")
        let request = lock.lockRequested()
        #expect(request.update.posts.isEmpty)
        let token = try! #require(request.armLockTimeout)
        #expect(names(lock.sessionPropertiesChanged(["LockedHint": .boolean(true)], at: "T1")).count == 2)
        // The answer came: the timeout changes nothing and is not counted.
        let expired = lock.lockRequestExpired(token)
        #expect(expired.log == nil && expired.update.posts.isEmpty)
        #expect(lock.unansweredLockRequests == 0)
    }

    @Test func aLockRequestThatNoLockFollowsIsForgottenAfterItsTimeout() {
        var lock = SessionLock(user: "alice")
        _ = lock.start(at: "T0")
        let token = try! #require(lock.lockRequested().armLockTimeout)
        let expired = lock.lockRequestExpired(token)
        #expect(expired.update.posts.isEmpty)
        #expect(expired.log != nil)
        #expect(lock.state == .active)
        #expect(lock.unansweredLockRequests == 1)
        #expect(lock.lockRequestExpired(token).log == nil)
    }

    @Test func aLockedHintOfTheWrongTypeIsRefusedWithAReason() {
        var lock = SessionLock(user: "alice")
        _ = lock.start(at: "T0")
        let output = lock.sessionPropertiesChanged(["LockedHint": .string("yes")], at: "T1")
        #expect(output.update.posts.isEmpty)
        #expect(output.update.refusals == ["org.freedesktop.login1.Session.LockedHint must be 'b', not 's'"])
        #expect(lock.state == .active)
    }
}

extension SessionLockTests {
    @Test func aLockAnnouncedByTheHookHoldsTheSessionAwayAndPostsNothingItself() {
        var lock = SessionLock(user: "alice")
        _ = lock.start(at: "T0")
        // herald-session-hook lock: it posted session.state and willResignActive itself.
        #expect(lock.stateAnnounced(.away).update.posts.isEmpty)
        #expect(lock.state == .away)
        // A screen saver comes and goes under swaylock: nothing, the hook's lock holds.
        #expect(lock.screenSaverChanged("a /a", active: true, at: "T1").update.posts.isEmpty)
        #expect(lock.screenSaverChanged("a /a", active: false, at: "T2").update.posts.isEmpty)
        // herald-session-hook unlock.
        #expect(lock.stateAnnounced(.active).update.posts.isEmpty)
        #expect(lock.state == .active)
        let later = lock.sessionPropertiesChanged(["LockedHint": .boolean(true)], at: "T3")
        #expect(later.update.posts.map(\.name) == ["session.state", "session.willResignActive"])
    }
}
