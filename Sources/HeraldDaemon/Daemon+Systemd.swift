import HeraldPosix

/// heraldd under systemd: socket activation and readiness notification (contrib/systemd/user).
///
/// Both are optional and detected from the environment, so the same binary runs unchanged when started by hand.
extension Daemon {
    /// Takes the listening socket systemd passed (`LISTEN_FDS`), or nil when heraldd was started by hand.
    ///
    /// heraldd serves the socket it was given, wherever it is bound, as every socket-activated daemon does: the
    /// client that triggered the activation is waiting on it. When that path is not where clients look by default,
    /// it says so once, with the `HERALD_SOCKET=` a client needs.
    ///
    /// - Parameters:
    ///   - configuredPath: where clients look for the socket (`--socket`, `$HERALD_SOCKET`, `$XDG_RUNTIME_DIR`).
    ///   - logger: for the lines saying which socket is used.
    ///   - stored: where the state logs systemd kept in its descriptor store (`FDNAME=herald-state-N`) go.
    /// - Returns: the socket, with the path it is bound to (nil for an abstract address), or nil.
    /// - Throws: `StartupError` when the passed descriptors are unusable: more than one, or one that is not a
    ///   listening Unix stream socket.
    static func takeSocketFromSystemd(
        configuredPath: String,
        logger: Logger,
        stored: inout [SystemdActivation.StoredDescriptor]
    ) throws -> ActivatedSocket? {
        let socket: ActivatedSocket?
        do {
            socket = try SystemdActivation.takeListeningSocket(storedPrefix: StateStore.storedName, stored: &stored)
        } catch {
            throw StartupError(description: "\(error)")
        }
        guard let socket else { return nil }
        if let path = socket.path, path != configuredPath {
            logger.warning(
                "systemd passed a socket bound to \(path), but clients look for \(configuredPath) by default: "
                    + "serving \(path); clients need HERALD_SOCKET=\(path)"
            )
        }
        logger.info("using the listening socket systemd passed for \(socket.path ?? "an abstract address")")
        return socket
    }

    /// Sends `READY=1` to `$NOTIFY_SOCKET`, if the service manager asked for it.
    func notifySystemdReady(path: String) {
        guard let notifier = SystemdNotifier.fromEnvironment() else { return }
        do {
            try notifier.ready(status: "Listening on \(path)")
        } catch {
            // The daemon serves its clients either way; the manager will time the start out and say so.
            logger.warning("cannot tell systemd that heraldd is ready: \(error)")
        }
    }

    /// Sends `STOPPING=1` to `$NOTIFY_SOCKET`, if the service manager asked for it.
    func notifySystemdStopping() {
        guard let notifier = SystemdNotifier.fromEnvironment() else { return }
        do {
            try notifier.stopping(status: "Shutting down")
        } catch {
            logger.warning("cannot tell systemd that heraldd is stopping: \(error)")
        }
    }
}
