/// The decisions of a ``Herald`` that reconnects: which connection is current, which streams wait for the next one,
/// and when to try again. No I/O, no clock, no continuation: its owner opens connections, registers streams, sleeps
/// and finishes streams as the actions say, after releasing the lock the machine is kept under.
///
/// Every stream is always exactly one of:
/// - live on the current connection (that connection holds it, in its state, from its registration on);
/// - waiting for the next connection (this machine holds it, in `waiting` or, during a hand-over, `registering`);
/// - finished, with its consumer told why (an action hands it to the owner to finish).
///
/// A loss at any step of the hand-over moves every stream not yet live back to waiting and starts the next attempt.
/// Connections are numbered (generations): a late event about a connection that is no longer current changes nothing.
struct ReconnectionStateMachine: Sendable {
    /// A stream, identified by its buffer.
    typealias StreamID = ObjectIdentifier

    private enum State: Sendable {
        /// Connection `generation` is current and every stream is live on it. No reconnect task runs.
        case connected(generation: Int)
        /// No connection: the reconnect task sleeps before its next attempt, or is about to make it.
        case waiting(waiting: [StreamID: Subscription], failures: Int)
        /// The reconnect task is opening connection `generation`; `lost` once that connection has already ended.
        case connecting(generation: Int, waiting: [StreamID: Subscription], failures: Int, lost: Bool)
        /// Connection `generation` is current; `registering` are being subscribed on it, each live once registered.
        /// `taskEnded` once the reconnect task has stopped waiting for them (see ``handOverEnded(generation:)``).
        case handingOver(generation: Int, registering: [StreamID: Subscription], taskEnded: Bool)
        /// Closed by its owner, or ended by a loss that reconnecting cannot fix: nothing is subscribed again.
        case ended(HeraldError)
    }

    /// What to do about a lost connection.
    enum LossAction: Sendable {
        /// Nothing: a late report about a connection that is no longer current.
        case none
        /// These streams now wait for the next connection: watch them, so that one whose consumer goes away is
        /// forgotten (``streamEnded(_:)``); and, with `startTask`, start the reconnect task (none is running).
        case reconnect(watch: [Subscription], startTask: Bool)
        /// Finish these streams with `reason`: the Herald has ended.
        case finish([Subscription], HeraldError)
    }

    /// What the reconnect task does next.
    enum AttemptAction: Sendable, Equatable {
        /// Open connection `generation`.
        case connect(generation: Int)
        /// Stop: the Herald has ended.
        case stop
    }

    /// What the reconnect task does after an attempt failed, was abandoned, or after a hand-over.
    enum NextStep: Sendable, Equatable {
        /// Sleep this long, then ``attemptStarting()``.
        case retry(after: Duration)
        /// The task is done: connected, or the Herald has ended.
        case stop
    }

    /// What to do with a connection just opened.
    enum ConnectedAction: Sendable {
        /// Make it current and register these streams on it, each announced by a `herald.reconnected` notice.
        case handOver([Subscription])
        /// Close it: it was lost already, or the Herald has ended; then go on with `next`.
        case abandon(next: NextStep)
    }

    private var state = State.connected(generation: 0)
    private var nextGeneration = 1

    /// The first retry comes after this, and each failure doubles it up to ``maximumDelay``.
    static let firstDelay = Duration.milliseconds(50)
    static let maximumDelay = Duration.seconds(2)

    /// A machine whose connection 0 is current.
    init() {}

    /// The generation of the current connection, nil while there is none.
    var currentGeneration: Int? {
        switch state {
        case .connected(let generation), .handingOver(let generation, _, _): generation
        case .waiting, .connecting, .ended: nil
        }
    }

    /// Whether the Herald has ended.
    var hasEnded: Bool {
        if case .ended = state { return true }
        return false
    }

    /// How many streams wait for the next connection, being registered on it included.
    var waitingCount: Int {
        switch state {
        case .waiting(let waiting, _), .connecting(_, let waiting, _, _): waiting.count
        case .handingOver(_, let registering, _): registering.count
        case .connected, .ended: 0
        }
    }

    private static func delay(afterFailures failures: Int) -> Duration {
        var delay = firstDelay
        for _ in 0..<min(failures, 16) where delay < maximumDelay {
            delay *= 2
        }
        return min(delay, maximumDelay)
    }

    /// Adds `streams` to `waiting`; a stream in both keeps the connection's copy, whose accounting is newer.
    private static func merge(_ streams: [Subscription], into waiting: inout [StreamID: Subscription]) {
        for stream in streams {
            waiting[StreamID(stream.continuation)] = stream
        }
    }

    /// Connection `generation` ended, for `reason`, holding `streams`.
    ///
    /// - Parameter retry: whether connecting again can help: the daemon went away, not this process nor a refusal.
    mutating func connectionLost(
        generation: Int,
        streams: [Subscription],
        reason: HeraldError,
        retry: Bool
    ) -> LossAction {
        switch state {
        case .ended(let why):
            return streams.isEmpty ? .none : .finish(streams, why)
        case .connected(let current) where current == generation:
            guard retry else {
                state = .ended(reason)
                return .finish(streams, reason)
            }
            var waiting: [StreamID: Subscription] = [:]
            Self.merge(streams, into: &waiting)
            state = .waiting(waiting: waiting, failures: 0)
            return .reconnect(watch: streams, startTask: true)
        case .handingOver(let current, var registering, let taskEnded) where current == generation:
            Self.merge(streams, into: &registering)
            guard retry else {
                state = .ended(reason)
                return .finish(Array(registering.values), reason)
            }
            state = .waiting(waiting: registering, failures: 0)
            return .reconnect(watch: Array(registering.values), startTask: taskEnded)
        case .connecting(let current, var waiting, let failures, _) where current == generation:
            // The attempt's own connection, lost before it was handed anything; the attempt sees it when it ends.
            Self.merge(streams, into: &waiting)
            state = .connecting(generation: current, waiting: waiting, failures: failures, lost: true)
            return .reconnect(watch: streams, startTask: false)
        case .connected, .handingOver, .connecting, .waiting:
            // An earlier connection, whose attempt failed: only a current connection is ever given a stream.
            precondition(
                streams.isEmpty,
                "reconnection: connection \(generation), no longer current, ended holding \(streams.count) streams"
            )
            return .none
        }
    }

    /// The reconnect task is about to make an attempt.
    mutating func attemptStarting() -> AttemptAction {
        switch state {
        case .waiting(let waiting, let failures):
            let generation = nextGeneration
            nextGeneration += 1
            state = .connecting(generation: generation, waiting: waiting, failures: failures, lost: false)
            return .connect(generation: generation)
        case .ended:
            return .stop
        case .connected, .connecting, .handingOver:
            preconditionFailure("reconnection: an attempt started while \(state)")
        }
    }

    /// Opening connection `generation` failed, or it opened and its preparation (the will) failed; the owner has
    /// closed it.
    mutating func attemptFailed(generation: Int) -> NextStep {
        switch state {
        case .connecting(let current, let waiting, let failures, _) where current == generation:
            state = .waiting(waiting: waiting, failures: failures + 1)
            return .retry(after: Self.delay(afterFailures: failures))
        case .ended:
            return .stop
        default:
            preconditionFailure("reconnection: attempt \(generation) failed while \(state)")
        }
    }

    /// Connection `generation` is open and prepared.
    mutating func attemptConnected(generation: Int) -> ConnectedAction {
        switch state {
        case .connecting(let current, let waiting, let failures, let lost) where current == generation:
            guard !lost else {
                state = .waiting(waiting: waiting, failures: failures + 1)
                return .abandon(next: .retry(after: Self.delay(afterFailures: failures)))
            }
            state = .handingOver(generation: generation, registering: waiting, taskEnded: false)
            return .handOver(Array(waiting.values))
        case .ended:
            return .abandon(next: .stop)
        default:
            preconditionFailure("reconnection: attempt \(generation) connected while \(state)")
        }
    }

    /// Stream `stream`, handed over to connection `generation`, is live on it.
    mutating func registered(_ stream: StreamID, generation: Int) {
        guard case .handingOver(let current, var registering, let taskEnded) = state, current == generation else {
            return
        }
        registering[stream] = nil
        state = .handingOver(generation: current, registering: registering, taskEnded: taskEnded)
    }

    /// Registering stream `stream` on connection `generation` failed with `reason`.
    ///
    /// - Parameter connectionEnded: whether that connection has ended, in which case its loss (which is reported
    ///   for every connection, and may not have been yet) moves the stream back to waiting.
    /// - Returns: the stream to finish with `reason`, when the connection refused it and goes on.
    mutating func registrationFailed(
        _ stream: StreamID,
        generation: Int,
        connectionEnded: Bool
    ) -> Subscription? {
        guard case .handingOver(let current, var registering, let taskEnded) = state, current == generation,
            !connectionEnded
        else { return nil }
        let refused = registering.removeValue(forKey: stream)
        state = .handingOver(generation: current, registering: registering, taskEnded: taskEnded)
        return refused
    }

    /// The reconnect task has seen every registration of connection `generation` through.
    mutating func handOverEnded(generation: Int) -> NextStep {
        switch state {
        case .handingOver(let current, let registering, _) where current == generation:
            if registering.isEmpty {
                state = .connected(generation: current)
            } else {
                // Their connection ended and its loss is on its way: that starts the next task.
                state = .handingOver(generation: current, registering: registering, taskEnded: true)
            }
            return .stop
        case .waiting(_, let failures):
            // Lost during the hand-over.
            return .retry(after: Self.delay(afterFailures: failures))
        case .ended:
            return .stop
        default:
            preconditionFailure("reconnection: hand-over to \(generation) ended while \(state)")
        }
    }

    /// The consumer of stream `stream` went away (cancelled, or the sequence released) while it waited: it is
    /// never subscribed again. One being registered withdraws itself on its connection.
    mutating func streamEnded(_ stream: StreamID) {
        switch state {
        case .waiting(var waiting, let failures):
            waiting[stream] = nil
            state = .waiting(waiting: waiting, failures: failures)
        case .connecting(let generation, var waiting, let failures, let lost):
            waiting[stream] = nil
            state = .connecting(generation: generation, waiting: waiting, failures: failures, lost: lost)
        case .handingOver(let generation, var registering, let taskEnded):
            registering[stream] = nil
            state = .handingOver(generation: generation, registering: registering, taskEnded: taskEnded)
        case .connected, .ended:
            break
        }
    }

    /// The owner closes the Herald (or releases it).
    ///
    /// - Returns: the streams waiting, to finish with `reason`; the current connection's own are its to finish.
    mutating func closeRequested(_ reason: HeraldError) -> [Subscription] {
        let waiting: [Subscription]
        switch state {
        case .waiting(let streams, _), .connecting(_, let streams, _, _): waiting = Array(streams.values)
        case .handingOver(_, let registering, _): waiting = Array(registering.values)
        case .connected, .ended: waiting = []
        }
        if case .ended = state { return waiting }
        state = .ended(reason)
        return waiting
    }
}
