import HeraldPlugins
import Testing

/// Impossible transitions are the owner's bugs: the machine traps with a message rather than guess.
struct SupervisorTrapTests {
    @Test func trapsWhenAPluginThatWasNotBeingSpawnedIsReportedSpawned() async {
        await #expect(processExitsWith: .failure) {
            var supervisor = Supervisor()
            let now = Instant(nanoseconds: 1)
            _ = supervisor.loaded([SupervisorHarness.plugin("a", .manual)], refused: [], now: now)
            _ = supervisor.spawned("a", pid: 42, now: now)
        }
    }

    @Test func trapsWhenARequestArrivesBeforeTheSpawnIsAnswered() async {
        await #expect(processExitsWith: .failure) {
            var supervisor = Supervisor()
            let now = Instant(nanoseconds: 1)
            _ = supervisor.loaded([SupervisorHarness.plugin("a", .start)], refused: [], now: now)
            _ = supervisor.daemonStarted(now: now)
            _ = supervisor.stopRequested("a", now: now)
        }
    }
}
