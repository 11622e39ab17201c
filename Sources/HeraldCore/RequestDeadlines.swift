import Dispatch
import HeraldPosix
import Synchronization

/// The timeouts of requests waiting for heraldd's answer, on one thread of their own.
///
/// A `Task.sleep` per request would run on the global concurrent executor: its first use starts libdispatch's worker
/// pool, whose monitor then wakes the process once a second for as long as it lives, so a client that made one
/// request could never be idle again (herald-dbus-bridge must wake 0 times in 60 s). This thread sleeps on a
/// futex-backed semaphore: with a deadline pending it wakes when the earliest falls due, and with none it does not
/// wake at all.
final class RequestDeadlines: Sendable {
    /// The one instance every connection shares.
    static let shared = RequestDeadlines()

    private struct Entry {
        var deadline: UInt64
        var action: @Sendable () -> Void
    }

    private struct State {
        var entries: [UInt64: Entry] = [:]
        var nextID: UInt64 = 1
        var started = false
        /// When the thread wakes next by itself; `.max` when it sleeps until signalled.
        var wakesAt: UInt64 = .max
    }

    private let state = Mutex(State())
    private let wake = DispatchSemaphore(value: 0)

    /// Runs `action` on the deadline thread after `duration`, unless ``cancel(_:)`` comes first.
    ///
    /// - Returns: the deadline, for ``cancel(_:)``.
    func schedule(after duration: Duration, _ action: @escaping @Sendable () -> Void) -> UInt64 {
        let nanoseconds =
            UInt64(max(0, duration.components.seconds)) * 1_000_000_000
            + UInt64(max(0, duration.components.attoseconds) / 1_000_000_000)
        let deadline = SystemClock.monotonicNanoseconds() &+ nanoseconds
        let (id, start, signal) = state.withLock { state in
            let id = state.nextID
            state.nextID += 1
            state.entries[id] = Entry(deadline: deadline, action: action)
            let start = !state.started
            state.started = true
            // With one timeout for every request, a new deadline is later than the ones pending: no wake-up.
            let signal = !start && deadline < state.wakesAt
            if signal || start { state.wakesAt = deadline }
            return (id, start, signal)
        }
        if start {
            DetachedThread.start(name: "herald-deadlines") { [self] in
                run()
            }
        } else if signal {
            wake.signal()
        }
        return id
    }

    /// Withdraws a deadline that has not fired; nothing happens for one that fired.
    func cancel(_ id: UInt64) {
        let signal = state.withLock { state in
            guard state.entries.removeValue(forKey: id) != nil else { return false }
            // The last one gone: the thread is told now, while something happens, rather than waking later for
            // nothing.
            guard state.entries.isEmpty, state.wakesAt != .max else { return false }
            state.wakesAt = .max
            return true
        }
        if signal { wake.signal() }
    }

    private func run() -> Never {
        while true {
            let now = SystemClock.monotonicNanoseconds()
            let (due, next) = state.withLock { state -> ([@Sendable () -> Void], UInt64) in
                var due: [@Sendable () -> Void] = []
                var next = UInt64.max
                for (id, entry) in state.entries {
                    if entry.deadline <= now {
                        due.append(entry.action)
                        state.entries[id] = nil
                    } else {
                        next = min(next, entry.deadline)
                    }
                }
                state.wakesAt = next
                return (due, next)
            }
            for action in due { action() }
            if next == .max {
                wake.wait()
            } else {
                _ = wake.wait(timeout: .now() + .nanoseconds(Int(clamping: next - now)))
            }
        }
    }
}

extension RequestDeadlines {
    /// Suspends the calling task for `duration`, or until it is cancelled, without the global concurrent executor:
    /// the deadline thread resumes it (the reconnection's backoff).
    func sleep(for duration: Duration) async {
        let sleeper = Sleeper()
        let timer = schedule(after: duration) { sleeper.wake() }
        defer { cancel(timer) }
        await withTaskCancellationHandler {
            await withCheckedContinuation { sleeper.wait($0) }
        } onCancel: {
            sleeper.wake()
        }
    }
}

/// One sleeping task, woken once: by its deadline or by its cancellation, whichever comes first, even before it
/// has suspended.
private final class Sleeper: Sendable {
    private enum State {
        case running
        case waiting(CheckedContinuation<Void, Never>)
        case woken
    }

    private let state = Mutex(State.running)

    func wait(_ continuation: CheckedContinuation<Void, Never>) {
        let resume = state.withLock { state -> Bool in
            guard case .running = state else { return true }
            state = .waiting(continuation)
            return false
        }
        if resume { continuation.resume() }
    }

    func wake() {
        let continuation = state.withLock { state -> CheckedContinuation<Void, Never>? in
            defer { state = .woken }
            guard case .waiting(let continuation) = state else { return nil }
            return continuation
        }
        continuation?.resume()
    }
}
