import Dispatch
import Herald
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How `herald` ends when it is interrupted.
enum Interruption {
    /// The connection a subcommand holds now, closed with a goodbye on interruption.
    private static let active = Mutex<Herald?>(nil)
    /// The exit status an interruption in progress will end with; 0 when none is.
    private static let pending = Atomic<Int32>(0)

    /// The status to exit with if the process is being interrupted: closing the connection ends the subcommand's
    /// work early, and that is not an error to report.
    static var interruptedStatus: Int32? {
        let status = pending.load(ordering: .acquiring)
        return status == 0 ? nil : status
    }
    /// The signal sources; kept for the life of the process.
    private nonisolated(unsafe) static var sources: [any DispatchSourceSignal] = []

    /// Makes SIGINT exit with status 130 and SIGTERM with 143 (128 + the signal, as a shell reports), printing
    /// nothing. The handler calls `_exit`, which is async-signal-safe. Subcommands with signal handling of their own
    /// (`demo`) replace it.
    static func exitOnSignals() {
        for number in [SIGINT, SIGTERM] {
            _ = signal(number) { received in
                _exit(128 + received)
            }
        }
    }

    /// Switches to leaving with a goodbye: being interrupted while holding a connection is leaving on purpose, so
    /// the connection is closed with `BYE` first, and the daemon discards its will (`observe --will`), which is for
    /// crashes and kills, not for Ctrl-C. Closing is bounded: after a second the process exits regardless.
    private static func closeConnectionOnSignals() {
        guard sources.isEmpty else { return }
        for number in [SIGINT, SIGTERM] {
            // The default action must not run; the dispatch source takes the signal instead.
            _ = signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                let status = 128 + number
                pending.store(status, ordering: .releasing)
                DispatchQueue.global().asyncAfter(deadline: .now() + 1) { _exit(status) }
                guard let herald = active.withLock({ $0 }) else { _exit(status) }
                Task {
                    await herald.close()
                    _exit(status)
                }
            }
            source.resume()
            sources.append(source)
        }
    }

    /// Registers the connection to close with a goodbye if the process is interrupted; nil when it is closed.
    static func track(_ herald: Herald?) {
        if herald != nil { closeConnectionOnSignals() }
        active.withLock { $0 = herald }
    }
}
