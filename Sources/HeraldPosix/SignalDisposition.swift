internal import CHeraldShim
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What the process does when a signal arrives, set process-wide.
///
/// For executables only: a library must not change a disposition its host relies on (sends avoid SIGPIPE with
/// `MSG_NOSIGNAL` instead). An ignored disposition survives `execve`, so a program that spawns children should reset
/// it for them.
public enum SignalDisposition {
    /// Ignores `signals` from now on: their arrival neither stops the process nor interrupts it.
    ///
    /// A signal that is ignored is discarded by the kernel even while blocked, so it never reaches a ``SignalFD``:
    /// do not ignore a signal the process means to read.
    ///
    /// - Parameter signals: the signal numbers, e.g. `[SIGPIPE, SIGUSR1]`.
    /// - Throws: ``SystemError``, e.g. EINVAL for SIGKILL or SIGSTOP, which cannot be ignored.
    public static func ignore(_ signals: [Int32]) throws(SystemError) {
        _ = try signals.withUnsafeBufferPointer { (buffer) throws(SystemError) in
            try completedSyscall("ignore signals \(signals)") {
                herald_ignore_signals(buffer.baseAddress, Int32(buffer.count))
            }
        }
    }

    /// The signal a handler installed by ``record(_:)`` took last; 0 while none arrived.
    private static let recordedSignal = Atomic<Int32>(0)

    /// Makes each of `signals` end the process at once with status 128 plus its number, as a shell reports a
    /// process a signal killed, printing nothing.
    ///
    /// The handler calls `_exit`, which is async-signal-safe, so it works whatever the process's threads are doing.
    /// Being a handler, not SIG_IGN, it is reset to the default by `execve`: children still stop on these signals.
    public static func exitOnArrival(_ signals: [Int32]) {
        for number in signals {
            _ = signal(number) { received in _exit(128 + received) }
        }
    }

    /// Makes each of `signals` only be recorded, for ``recorded`` to read; the process carries on.
    ///
    /// A handler can safely do little more than store a number, so a program polls ``recorded``. Being a handler,
    /// not SIG_IGN, it is reset to the default by `execve`: children still stop on these signals.
    public static func record(_ signals: [Int32]) {
        for number in signals {
            _ = signal(number) { received in SignalDisposition.recordedSignal.store(received, ordering: .relaxed) }
        }
    }

    /// The last signal recorded by the handlers of ``record(_:)``, or nil while none arrived.
    public static var recorded: Int32? {
        let number = recordedSignal.load(ordering: .relaxed)
        return number == 0 ? nil : number
    }
}
