import Foundation
import HeraldLaunch
import HeraldTestSupport
import Testing

/// A plugin test's world: a temporary directory holding the user's and the system's plugin folders, the small
/// `/bin/sh` scripts the plugins run, and the files those scripts write, and a real heraldd reading those folders.
///
/// Every file is given its mode explicitly (0644 plugin files, 0755 scripts), whatever the umask, because heraldd
/// refuses a plugin file or executable that group or others may write.
final class PluginBed: Sendable {
    let directory = TemporaryDirectory(prefix: "hp")

    /// `$XDG_CONFIG_HOME/herald/plugins`.
    var userFolder: String { directory.file("c/herald/plugins") }
    /// The one `$XDG_DATA_DIRS` entry's `herald/plugins`.
    var systemFolder: String { directory.file("d/herald/plugins") }

    init() throws {
        for folder in [userFolder, systemFolder] {
            try FileManager.default.createDirectory(
                atPath: folder,
                withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o755]
            )
        }
    }

    /// What heraldd needs to read this bed's folders and nothing else.
    var daemonEnvironment: [String: String?] {
        ["XDG_CONFIG_HOME": directory.file("c"), "XDG_DATA_DIRS": directory.file("d")]
    }

    /// Starts heraldd with plugins on, reading this bed's folders; `environment` is added to the daemon's, and so
    /// to every plugin's.
    func startDaemon(arguments: [String] = [], environment: [String: String?] = [:]) async throws -> TestDaemon {
        try await TestDaemon.start(
            arguments: arguments,
            directory: directory,
            plugins: true,
            environment: daemonEnvironment.merging(environment) { _, new in new }
        )
    }

    /// Writes the script `name`.sh: `#!/bin/sh`, then `body`, mode 0755. `$OUT` in the body is this bed's
    /// directory, where scripts leave their marks.
    @discardableResult
    func script(_ name: String, _ body: String) throws -> String {
        let path = directory.file("\(name).sh")
        try write(path, "#!/bin/sh\nOUT=\(directory.path)\n\(body)\n", mode: 0o755)
        return path
    }

    /// Writes the plugin file `name`.plugin into the user's folder (or the system's) with `text`, mode 0644.
    @discardableResult
    func pluginFile(_ name: String, system: Bool = false, _ text: String) throws -> String {
        let path = (system ? systemFolder : userFolder) + "/\(name).plugin"
        try write(path, text, mode: 0o644)
        return path
    }

    /// Writes a plugin file whose `Exec=` is the script `script` (written already), with more `Key=Value` lines.
    @discardableResult
    func plugin(_ name: String, system: Bool = false, exec script: String, _ keys: [String] = []) throws -> String {
        try pluginFile(name, system: system, (["[Plugin]", "Exec=\(script)"] + keys).joined(separator: "\n") + "\n")
    }

    /// Writes `text` to `path` and sets its mode, replacing what was there.
    func write(_ path: String, _ text: String, mode: Int) throws {
        try? FileManager.default.removeItem(atPath: path)
        guard FileManager.default.createFile(atPath: path, contents: Data(text.utf8)) else {
            throw TestFailure("cannot write \(path)")
        }
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
    }

    /// The lines of a file the scripts append to (empty when it does not exist yet).
    func lines(of name: String) -> [String] {
        guard let data = FileManager.default.contents(atPath: directory.file(name)) else { return [] }
        return String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
    }

    /// The pids a script recorded, one per start, with `echo $$ >> $OUT/NAME`.
    func pids(in name: String) -> [Int32] { lines(of: name).compactMap { Int32($0) } }
}

/// One plugin's state, as the daemon retains it in `herald.plugin.NAME` and `herald plugins --json` prints it.
struct PluginState: Sendable, CustomStringConvertible {
    var name: String
    /// "inactive", "starting", "running", …; "cleared" for the empty retained post that forgets a plugin.
    var state: String
    var pid: Int32?
    var restarts: Int
    var lastExit: String?
    var file: String?
    var provides: [String]
    var activation: String?
    var reason: String?

    init(name: String, object: [String: Any]) {
        self.name = name
        state = object["state"] as? String ?? "?"
        pid = (object["pid"] as? NSNumber).map { $0.int32Value }
        restarts = (object["restarts"] as? NSNumber)?.intValue ?? -1
        lastExit = object["lastExit"] as? String
        file = object["file"] as? String
        provides = object["provides"] as? [String] ?? []
        activation = object["activation"] as? String
        reason = object["reason"] as? String
    }

    init(cleared name: String) {
        self.name = name
        state = "cleared"
        restarts = 0
        provides = []
    }

    var description: String {
        "\(name): \(state) pid \(pid.map(String.init) ?? "-") restarts \(restarts) lastExit \(lastExit ?? "-")"
            + (reason.map { " reason \($0)" } ?? "")
    }

    /// The state in one line of `herald observe herald.plugin.* --json`, or nil for a line about another name.
    static func parse(observed line: String) -> PluginState? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
            let name = object["name"] as? String, name.hasPrefix("herald.plugin.")
        else { return nil }
        let plugin = String(name.dropFirst("herald.plugin.".count))
        guard let payload = object["payload"] as? [String: Any] else { return PluginState(cleared: plugin) }
        return PluginState(name: plugin, object: payload)
    }
}

/// `herald observe 'herald.plugin.*' --json`, running for the whole test: every state the daemon posts, in order.
struct PluginWatcher {
    let process: ChildProcess

    static func start(_ daemon: TestDaemon) async throws -> PluginWatcher {
        let process = try ChildProcess(
            TestBinaries.path("herald"),
            ["observe", "herald.plugin.*", "--json", "--ready"],
            environment: daemon.environment
        )
        try await process.waitForStderrLine(containing: "ready")
        return PluginWatcher(process: process)
    }

    /// Every state posted for `plugin` so far, oldest first (a retained value replayed at subscription included).
    func states(of plugin: String) -> [PluginState] {
        process.stdoutLines.compactMap(PluginState.parse(observed:)).filter { $0.name == plugin }
    }

    /// Waits until a state of `plugin` satisfies `condition`, and returns the first that does.
    @discardableResult
    func waitFor(
        _ plugin: String,
        _ what: String,
        timeout: Duration = .seconds(60),
        _ condition: @escaping @Sendable (PluginState) -> Bool
    ) async throws -> PluginState {
        try await process.wait(for: "\(plugin) \(what)", timeout: timeout) { stdout, _ in
            stdout.compactMap(PluginState.parse(observed:)).contains { $0.name == plugin && condition($0) }
        }
        return states(of: plugin).first(where: condition)!
    }

    /// Waits until `plugin`'s latest state satisfies `condition`, and returns it.
    @discardableResult
    func waitForLatest(
        _ plugin: String,
        _ what: String,
        timeout: Duration = .seconds(60),
        _ condition: @escaping @Sendable (PluginState) -> Bool
    ) async throws -> PluginState {
        try await process.wait(for: "\(plugin) \(what)", timeout: timeout) { stdout, _ in
            guard let last = stdout.compactMap(PluginState.parse(observed:)).last(where: { $0.name == plugin })
            else { return false }
            return condition(last)
        }
        return states(of: plugin).last!
    }
}

/// What `herald plugins` and the processes say, for assertions.
enum PluginProbe {
    /// `herald plugins --json`, by plugin name.
    static func list(_ daemon: TestDaemon) async throws -> [String: PluginState] {
        try await list(environment: daemon.environment)
    }

    /// `herald plugins --json` with `environment` (`HERALD_SOCKET`), by plugin name.
    static func list(environment: [String: String?]) async throws -> [String: PluginState] {
        let result = try await run("herald", ["plugins", "--json"], environment: environment)
        guard result.status == 0,
            let array = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [[String: Any]]
        else { throw TestFailure("herald plugins --json: status \(result.status): \(result.stdout) \(result.stderr)") }
        var states: [String: PluginState] = [:]
        for object in array {
            guard let name = object["name"] as? String else { continue }
            states[name] = PluginState(name: name, object: object)
        }
        return states
    }

    /// Runs `herald plugins ARGUMENTS` against the daemon.
    static func command(_ daemon: TestDaemon, _ arguments: [String]) async throws -> CommandResult {
        try await run("herald", ["plugins"] + arguments, environment: daemon.environment)
    }

    /// Whether `pid` is gone: no such process, or a zombie waiting for its parent to reap it.
    static func isGone(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return true }
        let state = stat[stat.index(after: close)...].split(separator: " ").first ?? ""
        return state == "Z" || state == "X"
    }

    /// Whether `pid` runs now (alive and not a zombie).
    static func isRunning(_ pid: Int32) -> Bool { !isGone(pid) }
}

extension DaemonProbe {
    /// CPU time used so far by all of `pid`'s threads, in seconds, from each thread's schedstat (nanoseconds on
    /// the CPU): finer than the 10 ms ticks of /proc/PID/stat, for an episode that costs a few milliseconds.
    static func cpuSecondsPrecisely(of pid: Int32) throws -> Double {
        let tasks = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")
        var nanoseconds: UInt64 = 0
        for task in tasks {
            guard let text = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/schedstat", encoding: .utf8),
                let first = text.split(separator: " ").first, let value = UInt64(first)
            else { continue }
            nanoseconds += value
        }
        return Double(nanoseconds) / 1e9
    }
}
