internal import HeraldWire

extension Herald {
    /// What to ask of a plugin that heraldd supervises (wire.md, `PLUGIN`).
    public enum PluginAction: String, Sendable, CaseIterable {
        /// Start it, clearing `failed`.
        case start
        /// Stop it: SIGTERM, then SIGKILL after 2 s.
        case stop
        /// Stop it if it runs, then start it, clearing `failed`.
        case restart
        /// Reread the plugin folders, as SIGHUP to heraldd does.
        case reload
    }

    /// The retained name under which heraldd posts the state of the plugin `name`: `herald.plugin.NAME`.
    ///
    /// - Parameter name: The plugin's name, its file's name without `.plugin`.
    public static func pluginStateName(_ name: String) -> String {
        "herald.plugin." + name
    }

    /// Asks heraldd to start, stop or restart the plugin `name`, or to reload its plugin folders (`PLUGIN`).
    ///
    /// Returns once the daemon has acted, not once the plugin runs: its retained ``pluginStateName(_:)`` tells what
    /// follows (`starting`, `running`, `failed` with the reason).
    ///
    /// - Parameters:
    ///   - action: What to do.
    ///   - name: The plugin's name; ignored for ``PluginAction/reload``.
    /// - Throws: ``HeraldError/Code/invalidName`` for a name that is not one name segment;
    ///   ``HeraldError/Code/daemonError`` with the daemon's `UNKNOWN_PLUGIN` when it supervises no plugin by that
    ///   name (the connection then ends, as after every daemon error); ``HeraldError/Code/timedOut``, or why the
    ///   connection ended.
    public func controlPlugin(_ action: PluginAction, named name: String = "") async throws(HeraldError) {
        let wireAction: Frame.Plugin.Action
        switch action {
        case .start: wireAction = .start
        case .stop: wireAction = .stop
        case .restart: wireAction = .restart
        case .reload: wireAction = .reload
        }
        let target = action == .reload ? "" : name
        if action != .reload {
            guard !name.contains("."), Name.isValid(name) else {
                throw HeraldError(.invalidName, "\"\(name)\" is not a plugin's name: one name segment, such as session")
            }
        }
        _ = try await connection.request(.acknowledgement, "PLUGIN \(wireAction) \(target)") { id in
            .plugin(Frame.Plugin(request: id, action: wireAction, name: target))
        }
    }
}
