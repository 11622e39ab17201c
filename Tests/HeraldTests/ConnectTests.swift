import Foundation
import HeraldTestSupport
import Synchronization
import Testing

@testable import Herald

/// `Herald.connect` suspends its task, never blocks a thread of the cooperative pool: connect(2) and the wait for
/// `WELCOME` happen on the connection's own reader thread.
@Suite struct ConnectTests {
    /// A counter that tasks share.
    final class Count: Sendable {
        let value = Atomic<Int>(0)
    }

    @Test func connectsToAStoppedDaemonLeaveOtherTasksRunningAndEachFailsAtItsTimeout() async throws {
        try await withDaemon { daemon in
            let timeout = Duration.seconds(2)
            let connects = 8
            daemon.process.signal(SIGSTOP)
            let finished = Count()
            // Ticks of an unrelated task, counted only while every connect is still waiting.
            let ticksWhileWaiting = Count()
            let ticker = Task {
                while finished.value.load(ordering: .acquiring) == 0 {
                    try? await Task.sleep(for: .milliseconds(10))
                    if finished.value.load(ordering: .acquiring) == 0 {
                        ticksWhileWaiting.value.add(1, ordering: .relaxed)
                    }
                }
            }
            let started = ContinuousClock.now
            let errors = await withTaskGroup(of: HeraldError?.self) { group in
                for index in 0..<connects {
                    group.addTask {
                        let error = await heraldError {
                            _ = try await Herald.connect(
                                socketPath: daemon.socketPath,
                                options: Herald.Options(clientName: "stalled-\(index)", requestTimeout: timeout)
                            )
                        }
                        finished.value.add(1, ordering: .acquiring)
                        return error
                    }
                }
                var errors: [HeraldError?] = []
                for await error in group { errors.append(error) }
                return errors
            }
            let waited = ContinuousClock.now - started
            daemon.process.signal(SIGCONT)
            await ticker.value
            #expect(errors.count == connects)
            #expect(errors.allSatisfy { $0?.code == .timedOut }, "\(errors)")
            // Each waited its own timeout, side by side: blocking the pool's threads, they would take turns, and
            // eight connects on two threads would need four timeouts.
            #expect(waited >= timeout)
            #expect(waited < timeout * 3, "\(waited)")
            // 2 s of waiting is 200 ticks of 10 ms; a pool whose threads were all blocked would give almost none.
            let ticks = ticksWhileWaiting.value.load(ordering: .relaxed)
            #expect(ticks >= 20, "\(ticks)")
            // The daemon answers again: a new connect works.
            let herald = try await connect(daemon)
            #expect(herald.isConnected)
            await herald.close()
        }
    }
}
