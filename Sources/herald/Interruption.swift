import Dispatch
import Herald
import HeraldCommandLine
import Synchronization

/// How `herald` ends when it is interrupted.
enum Interruption {
    /// The connection a subcommand holds now, closed with a goodbye on interruption.
    private static let active = Mutex<Herald?>(nil)
    /// The exit status an interruption in progress will end with; 0 when none is.
    private static let pending = Atomic<Int32>(0)
    /// Whether the signals are read from a stream yet; they are from the first connection on.
    private static let streaming = Atomic<Bool>(false)

    /// The status to exit with if the process is being interrupted: closing the connection ends the subcommand's
    /// work early, and that is not an error to report.
    static var interruptedStatus: ExitCode? {
        ExitCode(rawValue: pending.load(ordering: .acquiring))
            .flatMap { $0 == .success ? nil : $0 }
    }

    /// Makes SIGINT exit with status 130 and SIGTERM with 143, printing nothing, until a subcommand holds a
    /// connection. Subcommands with signal handling of their own (`demo`) replace it.
    static func exitOnSignals() {
        Signals.exitOnStop()
    }

    /// Switches to leaving with a goodbye: being interrupted while holding a connection is leaving on purpose, so
    /// the connection is closed with `BYE` first, and the daemon discards its will (`observe --will`), which is for
    /// crashes and kills, not for Ctrl-C. Closing is bounded: after a second the process exits regardless.
    private static func closeConnectionOnSignals() {
        guard !streaming.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let signals = Signals.stream()
        // On the command's own thread (runOnOwnThread): a task on the global executor would start libdispatch's
        // worker pool, whose monitor wakes the process once a second for good.
        Task.detached(executorPreference: mainTaskExecutor) {
            for await number in signals {
                let status = ExitCode(signal: number) ?? .failure
                pending.store(status.rawValue, ordering: .releasing)
                // Not on the cooperative pool: the bound holds even if every task is stuck.
                DispatchQueue.global().asyncAfter(deadline: .now() + 1) { Terminal.exitImmediately(status) }
                guard let herald = active.withLock({ $0 }) else { Terminal.exitImmediately(status) }
                await herald.close()
                Terminal.exitImmediately(status)
            }
        }
    }

    /// Registers the connection to close with a goodbye if the process is interrupted; nil when it is closed.
    static func track(_ herald: Herald?) {
        if herald != nil { closeConnectionOnSignals() }
        active.withLock { $0 = herald }
    }
}
