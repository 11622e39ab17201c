import Foundation
import HeraldCommandLine
import Testing

@Suite struct SignalsTests {
    /// A signal raised after `stream` reaches it, through the pipe and the `signals` thread, and the process goes on.
    /// SIGWINCH: ignored by default, so nothing else in the test process minds its handler.
    @Test(.timeLimit(.minutes(10)))
    func aSignalArrivesInTheStreamAndTheProcessGoesOn() async throws {
        let signals = Signals.stream([SIGWINCH])
        var iterator = signals.makeAsyncIterator()
        kill(getpid(), SIGWINCH)
        let first = await iterator.next()
        #expect(first == SIGWINCH)
        kill(getpid(), SIGWINCH)
        kill(getpid(), SIGWINCH)
        // Two more: the kernel keeps one signal of a kind pending, so two that arrive together may come as one.
        #expect(await iterator.next() == SIGWINCH)
        // The reader is a thread named for what it does, and no libdispatch worker was started for it.
        let tasks = try FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")
        let names = tasks.compactMap { try? String(contentsOfFile: "/proc/self/task/\($0)/comm", encoding: .utf8) }
        #expect(names.contains("signals\n"))
    }
}
