import HeraldWire

/// What users see of one plugin: the payload the daemon retains as `herald.plugin.NAME`, and a row of
/// `herald plugins`.
public struct PluginStatus: Hashable, Sendable {
    /// A plugin's visible state.
    public enum State: String, Hashable, Sendable, CaseIterable {
        /// Loaded and never started: waiting for its activation.
        case inactive
        /// Being spawned, or waiting out the backoff before a restart (then `pid` is nil and `lastExit` says why).
        case starting
        /// Its process is running.
        case running
        /// Sent SIGTERM (and SIGKILL 2 s later) and not gone yet.
        case stopping
        /// Failed too often, or failed with `Restart=no`; not restarted until `herald plugins restart NAME`.
        case failed
        /// Not running and not to be restarted: stopped on request, exited cleanly, or shut down.
        case stopped
        /// Its file, or its executable, was refused; `reason` says why.
        case refused
    }

    /// The plugin's state.
    public var state: State
    /// The process id while there is a process (running or stopping).
    public var pid: Int32?
    /// How many times the supervisor restarted it after an exit (not counting starts people asked for).
    public var restarts: Int
    /// How the last process ended: "exited 1", "killed by signal 9 (SIGKILL)", "spawn failed: ...".
    public var lastExit: String?
    /// When `state` last changed.
    public var since: Instant
    /// The plugin file's path.
    public var file: String
    /// The `Provides=` patterns; empty for a refused file.
    public var provides: [String]
    /// The `Activation=`; nil for a refused file.
    public var activation: Activation?
    /// Why the file was refused; nil otherwise.
    public var reason: String?

    /// Creates a status.
    public init(
        state: State,
        pid: Int32? = nil,
        restarts: Int = 0,
        lastExit: String? = nil,
        since: Instant,
        file: String,
        provides: [String] = [],
        activation: Activation? = nil,
        reason: String? = nil
    ) {
        self.state = state
        self.pid = pid
        self.restarts = restarts
        self.lastExit = lastExit
        self.since = since
        self.file = file
        self.provides = provides
        self.activation = activation
        self.reason = reason
    }

    /// The retained payload: one JSON object with every field, absent values as `null`.
    ///
    /// `{"state":"running","pid":4242,"restarts":0,"lastExit":null,"since":"2026-11-25T09:00:00Z",
    /// "file":"/home/a/.config/herald/plugins/session.plugin","provides":["session.*"],"activation":"start",
    /// "reason":null}`
    ///
    /// - Parameter since: `since` as the owner words it, an ISO 8601 wall time, so this type reads no clock.
    public func json(since: String) -> String {
        var out = "{\"state\":\(JSONString.quoted(state.rawValue))"
        out += ",\"pid\":\(pid.map { String($0) } ?? "null")"
        out += ",\"restarts\":\(restarts)"
        out += ",\"lastExit\":\(lastExit.map { JSONString.quoted($0) } ?? "null")"
        out += ",\"since\":\(JSONString.quoted(since))"
        out += ",\"file\":\(JSONString.quoted(file))"
        out += ",\"provides\":[\(provides.map { JSONString.quoted($0) }.joined(separator: ","))]"
        out += ",\"activation\":\(activation.map { JSONString.quoted($0.rawValue) } ?? "null")"
        out += ",\"reason\":\(reason.map { JSONString.quoted($0) } ?? "null")}"
        return out
    }

    /// `json(since:)` as payload bytes.
    public func payload(since: String) -> [UInt8] { Array(json(since: since).utf8) }
}
