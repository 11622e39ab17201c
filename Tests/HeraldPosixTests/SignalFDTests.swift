#if os(Linux)
import Glibc
import HeraldPosix
import Testing

@Suite struct SignalFDTests {
    // The only test in the process that touches SIGUSR1. raise() sends it to the calling thread, which has it
    // blocked, so it waits on the signalfd and cannot reach another test's thread.
    @Test func catchesASignalRaisedAtItself() throws {
        let signals = try SignalFD(signals: [SIGUSR1])
        defer { try? SignalFD.unblock(signals: [SIGUSR1]) }
        #expect(try signals.readSignal() == nil)
        #expect(raise(SIGUSR1) == 0)
        #expect(try signals.readSignal() == SIGUSR1)
        #expect(try signals.readSignal() == nil)
    }
}
#endif
