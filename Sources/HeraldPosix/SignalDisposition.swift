internal import CHeraldShim

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
}
