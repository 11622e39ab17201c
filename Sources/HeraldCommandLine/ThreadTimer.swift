import HeraldPosix
import Synchronization

/// A timeout that sleeps on a thread of its own, in the kernel, instead of with `Task.sleep`.
///
/// `Task.sleep` schedules its wake-up through libdispatch, whose worker pool, once started, has a monitor that wakes
/// the process once a second for as long as it lives: `herald wait --timeout 60` woke 10 times in 10 s while nothing
/// happened. Here one thread sleeps in clock_nanosleep(2) until the deadline: the process wakes once, when the time
/// is up.
public enum ThreadTimer {
    /// Returns once `duration` has passed, or at once when the calling task is cancelled.
    ///
    /// A cancelled timer's thread sleeps on until the deadline, then ends without effect: it costs a sleeping
    /// thread, never a wake-up before then.
    ///
    /// - Parameter duration: how long to wait; zero or less returns at once.
    /// - Returns: true when the time ran out, false when the task was cancelled first.
    public static func sleep(for duration: Duration) async -> Bool {
        let (seconds, attoseconds) = duration.components
        guard seconds > 0 || (seconds == 0 && attoseconds > 0) else { return !Task.isCancelled }
        let nanoseconds = UInt64(seconds) * 1_000_000_000 + UInt64(attoseconds / 1_000_000_000)
        let deadline = SystemClock.monotonicNanoseconds() &+ nanoseconds
        let waiter = Waiter()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                waiter.install(continuation)
                DetachedThread.start(name: "herald-timeout") {
                    // A signal handler that runs on this thread cuts a sleep short: sleep again, to the deadline.
                    while case let now = SystemClock.monotonicNanoseconds(), now < deadline {
                        SystemClock.sleep(nanoseconds: deadline - now)
                    }
                    waiter.finish(true)
                }
            }
        } onCancel: {
            waiter.finish(false)
        }
    }

    /// The one answer of a timer: the first of the deadline and the cancellation, given to the waiting task once,
    /// whichever of the two comes before the task waits.
    private final class Waiter: Sendable {
        private struct State {
            var continuation: CheckedContinuation<Bool, Never>?
            var result: Bool?
        }

        private let state = Mutex(State())

        func install(_ continuation: CheckedContinuation<Bool, Never>) {
            let ready = state.withLock { state -> Bool? in
                if let result = state.result { return result }
                state.continuation = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }

        func finish(_ result: Bool) {
            let continuation = state.withLock { state -> CheckedContinuation<Bool, Never>? in
                guard state.result == nil else { return nil }
                state.result = result
                defer { state.continuation = nil }
                return state.continuation
            }
            continuation?.resume(returning: result)
        }
    }
}
