#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How `herald` ends when it is interrupted.
enum Interruption {
    /// Makes SIGINT exit with status 130 and SIGTERM with 143 (128 + the signal, as a shell reports), printing
    /// nothing.
    ///
    /// The handler calls `_exit`, which is async-signal-safe, rather than unwinding the running tasks: there is
    /// nothing left to save. Output has already gone out with write(2) as it was produced, and the daemon treats a
    /// closed socket as the client leaving, dropping its subscriptions.
    static func exitOnSignals() {
        for number in [SIGINT, SIGTERM] {
            _ = signal(number) { received in
                _exit(128 + received)
            }
        }
    }
}
