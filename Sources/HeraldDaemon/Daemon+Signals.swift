import HeraldPosix

#if canImport(Glibc)
import Glibc
#endif

/// heraldd's life beyond the traffic: the signals it reads from its loop (SIGHUP reloads, SIGCHLD reaps plugins,
/// SIGTERM and SIGINT shut down within the flush bound), and accepting again after a pause for descriptors.
extension Daemon {
    /// A signal arrived on the loop's signalfd.
    mutating func signalArrived(_ signal: Int32) {
        if signal == SIGHUP {
            reloadRequested()
        } else if signal == SIGCHLD {
            childrenExited()
        } else {
            beginShutdown(signal: signal)
        }
    }

    /// SIGHUP: the conventional request to re-read configuration. It never stops heraldd: it rereads the plugin
    /// folders.
    private mutating func reloadRequested() {
        logger.notice("SIGHUP received: reload requested")
        reloadPlugins()
    }

    mutating func beginShutdown(signal: Int32) {
        guard shutdownDeadline == nil else { return }
        logger.notice("\(signal == SIGINT ? "SIGINT" : "SIGTERM") received: shutting down")
        if let listener {
            loop.deregister(listener.descriptor.rawValue)
            self.listener = nil
        }
        acceptPaused = false
        notifySystemdStopping()
        // A socket systemd bound stays: systemd listens on it again and starts heraldd on the next connection (and
        // then `socketFile` is nil). The file heraldd bound is removed through its directory's descriptor, and only if
        // it is still that file: the path may lead elsewhere by now.
        if let file = socketFile.take() {
            do {
                if try !file.remove() {
                    logger.warning("left \(options.socketPath) alone: it is no longer the socket heraldd bound")
                }
            } catch {
                logger.warning("cannot remove \(options.socketPath): \(error)")
            }
        }
        broker.shutDown(into: &actions)
        stopPlugins()
        let deadline = SystemClock.monotonicNanoseconds() + Self.flushBound
        shutdownDeadline = deadline
        loop.schedule(.shutdownBound, at: deadline)
        loop.schedule(.pluginStopBound, at: deadline + Self.pluginStopBound)
    }

    /// Watches the listener again after a pause for want of descriptors.
    mutating func resumeAccepting() {
        guard acceptPaused, let listener else { return }
        do {
            try loop.register(listener.descriptor.rawValue, interest: .readable, handler: .listener)
            acceptPaused = false
            logger.info("accepting connections again")
        } catch {
            logger.error("cannot watch the listening socket again: \(error)")
            loop.schedule(.resumeAccepting, at: SystemClock.monotonicNanoseconds() + Self.acceptPause)
        }
    }
}
