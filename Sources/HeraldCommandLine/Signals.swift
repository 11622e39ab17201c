import HeraldPosix
import Synchronization

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
    /// A handler writes each signal to a pipe (``SignalDisposition/forwardToPipe(_:)``) that one thread, named
    /// `signals`, reads: it sleeps while no signal comes, and no libdispatch worker is started (a dispatch source's
    /// handler would start the worker pool, whose monitor then wakes the process once a second for good). Being a
    /// handler, not SIG_IGN, it is reset by `execve`: children started afterwards still stop on these signals. If the
    /// pipe cannot be made (EMFILE), the signals keep their default action and the stream never yields.
    ///
    /// - Parameter numbers: the signals, ``stopping`` by default.
    /// - Returns: the signal numbers as they arrive; the stream never ends.
    public static func stream(_ numbers: [Int32] = stopping) -> AsyncStream<Int32> {
        let (stream, continuation) = AsyncStream.makeStream(of: Int32.self, bufferingPolicy: .bufferingNewest(16))
        guard let readEnd = try? SignalDisposition.forwardToPipe(numbers) else { return stream }
        let first = listeners.withLock { listeners in
            listeners.append((numbers, continuation))
            return listeners.count == 1
        }
        if first {
            DetachedThread.start(name: "signals") { deliver(from: readEnd) }
        }
        return stream
    }

    /// The streams of ``stream(_:)`` with the signals each asked for.
    private static let listeners = Mutex<[(numbers: [Int32], continuation: AsyncStream<Int32>.Continuation)]>([])

    /// Reads the signal pipe for as long as the process lives, and yields each signal to the streams that asked.
    private static func deliver(from readEnd: Int32) {
        var byte: UInt8 = 0
        while true {
            let count = read(readEnd, &byte, 1)
            if count == 1 {
                let number = Int32(byte)
                for listener in listeners.withLock({ $0 }) where listener.numbers.contains(number) {
                    listener.continuation.yield(number)
                }
            } else if count < 0, errno == EINTR {
                continue
            } else {
                return
            }
        }
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
