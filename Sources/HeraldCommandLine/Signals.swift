import Dispatch
import HeraldPosix

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// SIGINT and SIGTERM, the signals that ask an executable to stop, in the three ways Herald's executables take them.
///
/// - ``stream(_:)``: as an AsyncSequence, so that Ctrl-C ends work through cancellation (a chat client leaves the
///   room) rather than killing the process in the middle of a write;
/// - ``exitOnStop()``: ending the process at once, for a command with nothing to clean up;
/// - ``recordStops()``: recorded only, for a program that polls ``recordedStop`` and stops its children itself.
///
/// ``runMain(_:run:)`` unblocks them first: a parent may start a process with signals blocked (Foundation's
/// `Process` passes on its spawning thread's mask), and Ctrl-C and SIGTERM must reach it all the same.
public enum Signals {
    /// SIGINT and SIGTERM.
    public static let stopping: [Int32] = [SIGINT, SIGTERM]

    /// Stops the default action of `numbers` and delivers them in a stream instead, for the life of the process.
    ///
    /// The signals are ignored at the kernel and read by a dispatch source, so a handler runs on no thread of the
    /// process's own; an ignored disposition survives `execve`, so a program that starts children after this
    /// should not rely on them stopping on these signals.
    ///
    /// - Parameter numbers: the signals, ``stopping`` by default.
    /// - Returns: the signal numbers as they arrive; the stream never ends.
    public static func stream(_ numbers: [Int32] = stopping) -> AsyncStream<Int32> {
        let (stream, continuation) = AsyncStream.makeStream(of: Int32.self, bufferingPolicy: .bufferingNewest(16))
        // The dispatch source must get the signal, not the default action.
        try? SignalDisposition.ignore(numbers)
        for number in numbers {
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            // The handler keeps its source alive: signals are handled until the process exits.
            source.setEventHandler { [source] in
                _ = source
                continuation.yield(number)
            }
            source.resume()
        }
        return stream
    }

    /// Makes SIGINT and SIGTERM end the process at once with 130 and 143 (128 plus the signal, as a shell reports),
    /// printing nothing; children started afterwards still get the default action.
    public static func exitOnStop() {
        SignalDisposition.exitOnArrival(stopping)
    }

    /// Makes SIGINT and SIGTERM only be recorded, for ``recordedStop``; children started afterwards still get the
    /// default action, so they stop on a signal sent to the whole process group.
    public static func recordStops() {
        SignalDisposition.record(stopping)
    }

    /// The stop signal recorded since ``recordStops()``, or nil.
    public static var recordedStop: Int32? {
        SignalDisposition.recorded
    }

    /// Lets SIGINT and SIGTERM through a signal mask inherited from the parent.
    static func unblockStopping() {
        #if os(Linux)
        try? SignalFD.unblock(signals: stopping)
        #endif
    }
}
