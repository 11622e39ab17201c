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

    /// The write end of the pipe the handlers of ``forwardToPipe(_:)`` write to; -1 until it is made.
    private static let pipeWriteEnd = Atomic<Int32>(-1)
    /// The read end of that pipe, made once for the process.
    private static let pipeReadEnd = Mutex<Int32?>(nil)

    /// Makes each of `signals` write its number, as one byte, to the process's signal pipe, and returns the pipe's
    /// read end.
    ///
    /// The read end blocks until a signal arrives, so one thread reading it takes the signals as they come and sleeps
    /// while none does: unlike a dispatch source, this starts no libdispatch worker, whose monitor would wake the
    /// process once a second for good. Unlike a ``SignalFD``, it needs the signals blocked in no thread. Every call
    /// returns the same read end; the pipe is never closed. The write end does not block: were the pipe ever full
    /// (64 KiB of signals nobody read), a signal would be dropped, never the thread it interrupted held up. Being a
    /// handler, not SIG_IGN, it is reset to the default by `execve`: children still stop on these signals.
    ///
    /// - Parameter signals: the signal numbers, each below 256.
    /// - Returns: the read end, close-on-exec, blocking.
    /// - Throws: ``SystemError`` when the pipe cannot be made (EMFILE); the signals then keep what they did.
    public static func forwardToPipe(_ signals: [Int32]) throws(SystemError) -> Int32 {
        let readEnd = try pipeReadEnd.withLock { (readEnd) throws(SystemError) -> Int32 in
            if let readEnd { return readEnd }
            var ends: [Int32] = [-1, -1]
            _ = try completedSyscall("pipe2") { herald_pipe(&ends, 0) }
            _ = fcntl(ends[1], F_SETFL, fcntl(ends[1], F_GETFL) | O_NONBLOCK)
            pipeWriteEnd.store(ends[1], ordering: .releasing)
            readEnd = ends[0]
            return ends[0]
        }
        for number in signals {
            _ = signal(number) { received in
                // write(2) is async-signal-safe; errno is the interrupted code's, so it is put back.
                let saved = errno
                var byte = UInt8(truncatingIfNeeded: received)
                _ = write(SignalDisposition.pipeWriteEnd.load(ordering: .acquiring), &byte, 1)
                errno = saved
            }
        }
        return readEnd
    }

    /// The last signal recorded by the handlers of ``record(_:)``, or nil while none arrived.
    public static var recorded: Int32? {
        let number = recordedSignal.load(ordering: .relaxed)
        return number == 0 ? nil : number
    }
}
