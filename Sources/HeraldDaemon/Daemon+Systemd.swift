import HeraldPosix

/// heraldd under systemd: socket activation and readiness notification (contrib/systemd/user).
///
/// Both are optional and detected from the environment, so the same binary runs unchanged when started by hand.
extension Daemon {
    /// Takes the listening socket systemd passed (`LISTEN_FDS`), or nil when heraldd was started by hand.
    ///
    /// - Parameters:
    ///   - configuredPath: where clients look for the socket (`--socket`, `$HERALD_SOCKET`, `$XDG_RUNTIME_DIR`).
    ///   - logger: for the line saying which socket is used.
    /// - Throws: `StartupError` when the passed descriptors are unusable, or when systemd's socket is bound to a
    ///   path other than the one clients look for: they would never find it.
    static func takeSocketFromSystemd(configuredPath: String, logger: Logger) throws -> FileDescriptor? {
        let socket: ActivatedSocket?
        do {
            socket = try SystemdActivation.takeListeningSocket()
        } catch {
            throw StartupError(description: "\(error)")
        }
        guard let socket else { return nil }
        if let path = socket.path, path != configuredPath {
            throw StartupError(
                description: "systemd passed a socket bound to \(path), but clients look for \(configuredPath): "
                    + "make the unit's ListenStream= and heraldd's --socket (or $HERALD_SOCKET) agree"
            )
        }
        logger.info("using the listening socket systemd passed for \(socket.path ?? "an abstract address")")
        return socket.descriptor
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
