import HeraldWire
import Testing

@testable import Herald
@testable import HeraldCore

/// The reconnection's decisions, event by event, with no socket: every stream is live on the current connection,
/// waiting for the next one, or finished, whatever happens when.
@Suite struct ReconnectionStateMachineTests {
    typealias Machine = ReconnectionStateMachine

    let lost = HeraldError(.disconnected, "heraldd closed the connection")

    func stream(_ pattern: String = "a.*") -> Subscription {
        Subscription(
            patterns: [try! Pattern(pattern)],
            continuation: NotificationBuffer(policy: .bufferingOldest(16)),
            policy: .bufferingOldest(16)
        )
    }

    func ids(_ streams: [Subscription]) -> Set<ObjectIdentifier> {
        Set(streams.map { ObjectIdentifier($0.continuation) })
    }

    /// Loses connection 0 holding `streams`, as a daemon killed under a connected Herald does.
    func lose(_ machine: inout Machine, _ streams: [Subscription], generation: Int = 0) {
        guard
            case .reconnect(let watched, let startTask) =
                machine.connectionLost(generation: generation, streams: streams, reason: lost, retry: true)
        else {
            Issue.record("a loss did not reconnect")
            return
        }
        #expect(ids(watched) == ids(streams))
        #expect(startTask)
    }

    @Test func aLossMovesEveryStreamToWaitingAndStartsOneTask() {
        var machine = Machine()
        let streams = [stream(), stream("b")]
        lose(&machine, streams)
        #expect(machine.currentGeneration == nil)
        #expect(machine.waitingCount == 2)
        #expect(machine.attemptStarting() == .connect(generation: 1))
        guard case .handOver(let handed) = machine.attemptConnected(generation: 1) else {
            Issue.record("connected without a hand-over")
            return
        }
        #expect(ids(handed) == ids(streams))
        for stream in handed { machine.registered(ObjectIdentifier(stream.continuation), generation: 1) }
        #expect(machine.handOverEnded(generation: 1) == .stop)
        #expect(machine.currentGeneration == 1)
        #expect(machine.waitingCount == 0)
    }

    @Test func failedAttemptsRetryAfterADelayThatDoublesUpToTwoSeconds() {
        var machine = Machine()
        lose(&machine, [stream()])
        var delays: [Duration] = []
        for generation in 1...8 {
            #expect(machine.attemptStarting() == .connect(generation: generation))
            guard case .retry(let delay) = machine.attemptFailed(generation: generation) else {
                Issue.record("a failed attempt did not retry")
                return
            }
            delays.append(delay)
        }
        #expect(delays.map { $0 / .milliseconds(1) } == [50, 100, 200, 400, 800, 1600, 2000, 2000])
        #expect(machine.waitingCount == 1)
    }

    @Test func aLossDuringTheHandOverMovesEveryStreamNotYetLiveBackToWaiting() {
        var machine = Machine()
        let live = stream("live")
        let pending = stream("pending")
        let unregistered = stream("unregistered")
        lose(&machine, [live, pending, unregistered])
        _ = machine.attemptStarting()
        _ = machine.attemptConnected(generation: 1)
        machine.registered(ObjectIdentifier(live.continuation), generation: 1)
        // Connection 1 ends holding the live stream and the one waiting for its ACK; the third never reached it.
        guard
            case .reconnect(let watched, let startTask) =
                machine.connectionLost(generation: 1, streams: [live, pending], reason: lost, retry: true)
        else {
            Issue.record("a loss during the hand-over did not reconnect")
            return
        }
        #expect(ids(watched) == ids([live, pending, unregistered]))
        // The task handing over is still running: it goes on to the next attempt, no second task.
        #expect(!startTask)
        #expect(machine.waitingCount == 3)
        // Its registrations fail now; that changes nothing.
        #expect(
            machine.registrationFailed(ObjectIdentifier(pending.continuation), generation: 1, connectionEnded: true)
                == nil
        )
        #expect(machine.handOverEnded(generation: 1) == .retry(after: .milliseconds(50)))
        #expect(machine.attemptStarting() == .connect(generation: 2))
        guard case .handOver(let handed) = machine.attemptConnected(generation: 2) else {
            Issue.record("no hand-over to connection 2")
            return
        }
        #expect(ids(handed) == ids([live, pending, unregistered]))
    }

    @Test func aConnectionLostBeforeItIsHandedAnythingIsAbandoned() {
        var machine = Machine()
        lose(&machine, [stream()])
        #expect(machine.attemptStarting() == .connect(generation: 1))
        // A daemon that closes right after WELCOME: the loss comes before the attempt has finished preparing.
        guard
            case .reconnect(let watched, let startTask) =
                machine.connectionLost(generation: 1, streams: [], reason: lost, retry: true)
        else {
            Issue.record("the loss of an attempt's connection was not taken")
            return
        }
        #expect(watched.isEmpty && !startTask)
        guard case .abandon(let next) = machine.attemptConnected(generation: 1) else {
            Issue.record("a lost connection was handed streams")
            return
        }
        #expect(next == .retry(after: .milliseconds(50)))
        #expect(machine.attemptStarting() == .connect(generation: 2))
        #expect(machine.waitingCount == 1)
    }

    @Test func aRefusedRegistrationFinishesThatStreamOnly() {
        var machine = Machine()
        let refused = stream("refused")
        let accepted = stream("accepted")
        lose(&machine, [refused, accepted])
        _ = machine.attemptStarting()
        _ = machine.attemptConnected(generation: 1)
        let finished = machine.registrationFailed(
            ObjectIdentifier(refused.continuation),
            generation: 1,
            connectionEnded: false
        )
        #expect(finished.map { ObjectIdentifier($0.continuation) } == ObjectIdentifier(refused.continuation))
        machine.registered(ObjectIdentifier(accepted.continuation), generation: 1)
        #expect(machine.handOverEnded(generation: 1) == .stop)
        #expect(machine.currentGeneration == 1)
    }

    @Test func aRegistrationFailedWithItsConnectionWaitsForThatLossWhichStartsTheNextTask() {
        var machine = Machine()
        let stream = stream()
        lose(&machine, [stream])
        _ = machine.attemptStarting()
        _ = machine.attemptConnected(generation: 1)
        // The registration saw the connection end before its loss reached the machine.
        #expect(
            machine.registrationFailed(ObjectIdentifier(stream.continuation), generation: 1, connectionEnded: true)
                == nil
        )
        #expect(machine.handOverEnded(generation: 1) == .stop)
        #expect(machine.waitingCount == 1)
        guard
            case .reconnect(_, let startTask) =
                machine.connectionLost(generation: 1, streams: [], reason: lost, retry: true)
        else {
            Issue.record("the late loss did not reconnect")
            return
        }
        #expect(startTask)
        #expect(machine.waitingCount == 1)
        #expect(machine.attemptStarting() == .connect(generation: 2))
    }

    @Test func aStreamThatEndsWhileWaitingIsNeverHandedOver() {
        var machine = Machine()
        let gone = stream("gone")
        let kept = stream("kept")
        lose(&machine, [gone, kept])
        machine.streamEnded(ObjectIdentifier(gone.continuation))
        _ = machine.attemptStarting()
        // The other's consumer goes away while the attempt connects.
        machine.streamEnded(ObjectIdentifier(kept.continuation))
        guard case .handOver(let handed) = machine.attemptConnected(generation: 1) else {
            Issue.record("no hand-over")
            return
        }
        #expect(handed.isEmpty)
    }

    @Test func closingFinishesTheWaitingStreamsAndStopsEverything() {
        var machine = Machine()
        let streams = [stream(), stream("b")]
        lose(&machine, streams)
        #expect(machine.attemptStarting() == .connect(generation: 1))
        let finished = machine.closeRequested(HeraldError(.disconnected, "closed"))
        #expect(ids(finished) == ids(streams))
        #expect(machine.hasEnded)
        // The attempt under way opens its connection after all: it is closed, and nothing more happens.
        guard case .abandon(.stop) = machine.attemptConnected(generation: 1) else {
            Issue.record("a connection opened after close was not abandoned")
            return
        }
        let late = stream("late")
        guard
            case .finish(let ended, _) =
                machine.connectionLost(generation: 1, streams: [late], reason: lost, retry: true)
        else {
            Issue.record("a loss after close was not finished")
            return
        }
        #expect(ids(ended) == ids([late]))
        #expect(machine.closeRequested(HeraldError(.disconnected, "again")).isEmpty)
    }

    @Test func aLossThatReconnectingCannotFixFinishesEveryStreamWithItsReason() {
        var machine = Machine()
        let streams = [stream(), stream("b")]
        let refused = HeraldError(.daemonError, "heraldd reported PERMISSION_DENIED")
        guard
            case .finish(let finished, let reason) =
                machine.connectionLost(generation: 0, streams: streams, reason: refused, retry: false)
        else {
            Issue.record("a final loss reconnected")
            return
        }
        #expect(ids(finished) == ids(streams))
        #expect(reason.code == .daemonError)
        #expect(machine.hasEnded)
    }

    @Test func aLateLossOfAFailedAttemptChangesNothing() {
        var machine = Machine()
        lose(&machine, [stream()])
        _ = machine.attemptStarting()
        _ = machine.attemptFailed(generation: 1)
        _ = machine.attemptStarting()
        guard case .none = machine.connectionLost(generation: 1, streams: [], reason: lost, retry: true) else {
            Issue.record("the loss of a connection no longer current changed something")
            return
        }
        guard case .handOver(let handed) = machine.attemptConnected(generation: 2) else {
            Issue.record("no hand-over")
            return
        }
        #expect(handed.count == 1)
    }
}
