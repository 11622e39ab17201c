import HeraldWire
import Synchronization

/// How a ``Herald`` carries out its ``ReconnectionStateMachine``: it opens connections, registers streams, sleeps
/// and finishes streams as the machine says, outside the machine's lock.
extension Herald {
    /// What ``Herald/reconnection`` guards.
    struct Reconnection: Sendable {
        var machine = ReconnectionStateMachine()
        /// The reconnect tasks not yet ended: usually none or one; a task that has just said it is done may still be
        /// ending when a new loss starts the next, and ``Herald/close()`` waits for both.
        var tasks: [Int: Task<Void, Never>] = [:]
        var nextTask = 0
    }

    typealias StreamID = ReconnectionStateMachine.StreamID

    /// Tells the machine when connection `generation` ends, from now on (or at once, if it has already ended).
    func watch(_ connection: Connection, generation: Int) {
        connection.installLostHandler { [weak self] streams, reason, retry in
            guard let self else {
                for stream in streams { stream.continuation.finish(reason) }
                return
            }
            self.connectionLost(generation: generation, streams, reason: reason, retry: retry)
        }
    }

    private func connectionLost(generation: Int, _ streams: [Subscription], reason: HeraldError, retry: Bool) {
        let finishing = reconnection.withLock { reconnection -> ([Subscription], HeraldError)? in
            let action = reconnection.machine.connectionLost(
                generation: generation,
                streams: streams,
                reason: reason,
                retry: retry
            )
            switch action {
            case .none:
                return nil
            case .finish(let streams, let reason):
                return (streams, reason)
            case .reconnect(let watched, let startTask):
                // Under the lock, so that no registration on the next connection has replaced the handler yet.
                for stream in watched { watchWhileWaiting(stream, &reconnection) }
                if startTask {
                    options.logger?.info("lost the connection to heraldd (\(reason)); reconnecting")
                    startReconnecting(&reconnection)
                }
                return nil
            }
        }
        if let (streams, reason) = finishing {
            for stream in streams { stream.continuation.finish(reason) }
        }
    }

    /// Makes a stream that waits for the next connection tell the machine when its consumer goes away, so that it is
    /// never subscribed again; one gone already is forgotten now.
    private func watchWhileWaiting(_ stream: Subscription, _ reconnection: inout Reconnection) {
        let id = StreamID(stream.continuation)
        let installed = stream.continuation.installTermination { [weak self] _ in
            self?.reconnection.withLock { $0.machine.streamEnded(id) }
        }
        if !installed { reconnection.machine.streamEnded(id) }
    }

    /// Starts a reconnect task; called under the lock, in the same step as the decision.
    private func startReconnecting(_ reconnection: inout Reconnection) {
        let id = reconnection.nextTask
        reconnection.nextTask += 1
        // The task holds the Herald only while an attempt runs, never while it sleeps: a Herald nobody uses any more
        // is released, and the task ends with it.
        // Off the global concurrent executor, and sleeping on the deadline thread rather than with Task.sleep: either
        // would start libdispatch's worker pool, whose monitor wakes the process once a second for good (see
        // RequestDeadlines). Its steps run on the reader once connected, and on the StandbyExecutor between.
        reconnection.tasks[id] = Task(executorPreference: connection.executor) { [weak self] in
            var next = ReconnectionStateMachine.NextStep.retry(after: .zero)
            while case .retry(let delay) = next {
                if delay > .zero {
                    await RequestDeadlines.shared.sleep(for: delay)
                }
                guard let herald = self else { return }
                next = await herald.attemptReconnection()
            }
            _ = self?.reconnection.withLock { $0.tasks.removeValue(forKey: id) }
        }
    }

    /// Connects once more and, if that works, hands every waiting stream over, each announced by a
    /// `herald.reconnected` notice ahead of its retained values.
    ///
    /// - Returns: what to do next: sleep and try again, or stop (connected, or closed).
    private func attemptReconnection() async -> ReconnectionStateMachine.NextStep {
        let step = reconnection.withLock { $0.machine.attemptStarting() }
        guard case .connect(let generation) = step else { return .stop }
        let connection: Connection
        do throws(HeraldError) {
            connection = try await Connection.open(
                socketPath: path,
                options: options,
                executor: self.connection.executor
            )
        } catch {
            options.logger?.debug("reconnecting to heraldd failed: \(error)")
            return reconnection.withLock { $0.machine.attemptFailed(generation: generation) }
        }
        // Before anything can go wrong: a loss from here on reaches the machine.
        watch(connection, generation: generation)
        do throws(HeraldError) {
            try await prepare(connection)
        } catch let error where error.code == .refused {
            // The new daemon refused the will (its --max-wills, a name its rules refuse) and answered on a live
            // connection: nobody awaits this registration, so the streams go on without the will rather than
            // retrying a refusal forever.
            options.logger?.log(.warning, "heraldd refused the will on reconnection, going on without it: \(error)")
        } catch {
            options.logger?.debug("reconnecting to heraldd failed: \(error)")
            // Every connection an attempt opens is closed when the attempt fails: its socket and reader thread.
            await connection.close(goodbye: false)
            return reconnection.withLock { $0.machine.attemptFailed(generation: generation) }
        }
        let action = reconnection.withLock { reconnection in
            let action = reconnection.machine.attemptConnected(generation: generation)
            if case .handOver = action { current.withLock { $0 = connection } }
            return action
        }
        switch action {
        case .abandon(let next):
            await connection.close(goodbye: false)
            return next
        case .handOver(let streams):
            options.logger?.info("reconnected to heraldd on \(path)")
            // Concurrently: each waits for its own ACK. If the connection is lost meanwhile, the machine moves every
            // stream not yet live back to waiting, and the registrations still running fail at once.
            await withTaskGroup(of: Void.self) { group in
                for var stream in streams {
                    stream.announceReconnection(connection.noticeSender)
                    stream.continuation.flush()
                    group.addTask {
                        await self.handOver(stream, to: connection, generation: generation)
                    }
                }
            }
            return reconnection.withLock { $0.machine.handOverEnded(generation: generation) }
        }
    }

    /// Registers one waiting stream on connection `generation` and tells the machine how it went.
    private func handOver(_ stream: Subscription, to connection: Connection, generation: Int) async {
        let id = StreamID(stream.continuation)
        do throws(HeraldError) {
            try await connection.register(stream)
            reconnection.withLock { $0.machine.registered(id, generation: generation) }
        } catch {
            if error.code == .timedOut {
                // A daemon that does not answer a SUBSCRIBE is stuck: the next connection may do better, and every
                // stream goes back to waiting rather than ending.
                connection.fail(error)
            }
            let ended = connection.closedReason != nil
            let refused = reconnection.withLock {
                $0.machine.registrationFailed(id, generation: generation, connectionEnded: ended)
            }
            // Refused on a live connection: nothing will feed this stream again.
            refused?.continuation.finish(error)
        }
    }
}
