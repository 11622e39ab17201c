import HeraldBroker
import HeraldPosix

/// The bounds on connections that have not completed `HELLO`: each gets `--hello-timeout-ms` to send it, and at most
/// `--max-incomplete-connections` may be waiting at once. Connections that never speak then hold a place for a
/// bounded time only, and cannot take every place from the clients that do (dbus-daemon bounds its incomplete
/// connections the same two ways).
extension Daemon {
    /// A connection was accepted and opened in the broker: count it as waiting for `HELLO` and start its timeout, or
    /// refuse it when too many are waiting already.
    mutating func awaitHello(_ channel: Channel, _ fd: Int32) {
        let id = ConnectionID(Int(fd))
        if incompleteChannels >= options.maxIncompleteConnections {
            if !refusingIncomplete {
                refusingIncomplete = true
                logger.warning(
                    "\(incompleteChannels) connections have not completed HELLO: refusing new ones until fewer wait "
                        + "(--max-incomplete-connections)"
                )
            }
            broker.tooManyIncompleteConnections(id, limit: options.maxIncompleteConnections, into: &actions)
            return
        }
        channel.awaitingHello = true
        incompleteChannels += 1
        let timeout = UInt64(options.helloTimeoutMilliseconds) * 1_000_000
        channel.helloTimer = loop.schedule(
            .helloTimeout(fd: fd, serial: channel.serial),
            at: SystemClock.monotonicNanoseconds() + timeout
        )
    }

    /// The handshake timer of the connection accepted as `serial` on `fd` fired: close it with `HELLO_TIMEOUT` if it
    /// is still waiting for its `HELLO`.
    mutating func helloTimedOut(_ fd: Int32, serial: UInt64) {
        guard let channel = channels[Int(fd)], channel.serial == serial, channel.awaitingHello else { return }
        stopAwaitingHello(channel)
        let id = ConnectionID(Int(fd))
        let before = actions.count
        broker.helloTimedOut(id, afterMilliseconds: options.helloTimeoutMilliseconds, into: &actions)
        if actions.count > before {
            logger.info(
                "connection \(fd) (pid \(channel.credentials.pid)) sent no HELLO within "
                    + "\(options.helloTimeoutMilliseconds) ms: closing it"
            )
        }
    }

    /// Stops counting `channel` among the connections waiting for `HELLO`, and cancels its timer.
    mutating func stopAwaitingHello(_ channel: Channel) {
        if let timer = channel.helloTimer.take() { loop.cancel(timer) }
        channel.awaitingHello = false
        incompleteChannels -= 1
        if refusingIncomplete && incompleteChannels < options.maxIncompleteConnections {
            refusingIncomplete = false
            logger.notice("fewer connections wait for HELLO: accepting new ones again")
        }
    }
}
