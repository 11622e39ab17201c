import Synchronization

/// The events for the bridge's loop: appended by any thread, taken by the loop in batches.
///
/// A batch lets the loop apply a flood of signals to its sources and post only where each ended (the last retained
/// value of a name): a service sending 100,000 PropertiesChanged a second costs the loop its batches, not 100,000
/// posts. Signals are bounded: past ``signalLimit`` waiting, the oldest is dropped and ``overflowed`` set, and the
/// loop reads every source again; the newest signals are kept, so a service that answers no `GetAll` still ends at
/// the last value it sent.
final class Mailbox<Event: Sendable>: Sendable {
    /// How many signals may wait.
    static var signalLimit: Int { 1024 }

    private struct State {
        /// Everything but signals, in order.
        var others: [Event] = []
        /// The signals from `head` on, in order; the ones before `head` were dropped.
        var signals: [Event] = []
        var head = 0
        var isEmpty: Bool { others.isEmpty && head == signals.count }
    }

    private let state = Mutex(State())
    private let wakeups: AsyncStream<Void>.Continuation
    /// One element per time the mailbox went from empty to not empty.
    let wakes: AsyncStream<Void>
    /// Set when a signal was dropped; the loop clears it.
    let overflowed = Atomic<Bool>(false)

    init() {
        (wakes, wakeups) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Adds `event`; when ``signalLimit`` signals wait, a new signal pushes out the oldest.
    func deliver(_ event: Event, isSignal: Bool = false) {
        let (wake, dropped) = state.withLock { state -> (Bool, Bool) in
            let wasEmpty = state.isEmpty
            guard isSignal else {
                state.others.append(event)
                return (wasEmpty, false)
            }
            state.signals.append(event)
            guard state.signals.count - state.head > Self.signalLimit else { return (wasEmpty, false) }
            state.head += 1
            // Dropped slots are given back once they outnumber the live ones: amortized O(1) a signal.
            if state.head > Self.signalLimit {
                state.signals.removeFirst(state.head)
                state.head = 0
            }
            return (wasEmpty, true)
        }
        if dropped { overflowed.store(true, ordering: .relaxed) }
        if wake { wakeups.yield() }
    }

    /// Every event waiting: the others first (a bus connected, a notification to show), then the signals, each in
    /// order.
    func take() -> [Event] {
        state.withLock { state in
            defer { state = State() }
            return state.others + state.signals[state.head...]
        }
    }
}
