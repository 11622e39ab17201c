import Herald
import HeraldCommandLine

/// `herald plugins [--json]` and `herald plugins start|stop|restart NAME` / `herald plugins reload`: what heraldd's
/// plugins are doing, and asking it to act on one.
struct PluginsCommand: Subcommand {
    static let spec = CommandSpec(
        name: "herald plugins",
        abstract: "List the plugins heraldd supervises, or start, stop, restart one, or reload the plugin folders.",
        discussion: """
            With no action, prints each plugin's name, state, pid, restarts and last exit, then its file, the \
            names it provides and its activation; refused plugin files are listed with the reason. The states \
            come from the retained herald.plugin.NAME notifications heraldd posts. 'start' and 'restart' clear \
            'failed'; 'reload' rereads the folders, as SIGHUP to heraldd does. Each action returns once heraldd \
            has acted: the plugin's state tells what follows.
            """,
        arguments: [
            PositionalSpec(name: "action", help: "start, stop, restart or reload.", arity: .optional),
            PositionalSpec(name: "name", help: "The plugin, for start, stop and restart.", arity: .optional),
        ],
        options: [
            OptionSpec(long: "json", help: "Print a JSON array of the plugins' states, each with its name."),
            CommonOptions.socket,
        ]
    )

    var action: Herald.PluginAction?
    var name: String
    var json: Bool
    var socket: String?

    init(_ arguments: ParsedArguments) throws(UsageError) {
        json = arguments.flag("json")
        socket = arguments.value("socket")
        let words = arguments.positional("action") + arguments.positional("name")
        name = words.count > 1 ? words[1] : ""
        guard let word = words.first else {
            action = nil
            return
        }
        guard let action = Herald.PluginAction(rawValue: word) else {
            throw UsageError(message: "Unknown action '\(word)': use start, stop, restart or reload")
        }
        if json { throw UsageError(message: "'--json' lists plugins; it takes no action") }
        if action == .reload && !name.isEmpty {
            throw UsageError(message: "'reload' takes no plugin name")
        }
        if action != .reload && name.isEmpty {
            throw UsageError(message: "Missing expected argument '<name>' for '\(word)'")
        }
        self.action = action
    }

    func run() async throws(CommandFailure) {
        if let action {
            try await Daemon.ask(socket: socket) { herald throws(HeraldError) in
                try await herald.controlPlugin(action, named: name)
            }
            return
        }
        let states = try await Daemon.ask(socket: socket) { herald throws(HeraldError) in
            try await Self.states(from: herald)
        }
        if json {
            let objects = states.map { name, state -> String in
                var object = state
                object["name"] = .string(name)
                return String(decoding: JSONValue.encodeObject(object), as: UTF8.self)
            }
            _ = Terminal.writeStdout("[" + objects.joined(separator: ",") + "]\n")
        } else {
            _ = Terminal.writeStdout(Self.table(states))
        }
    }

    /// Every plugin's retained state, by plugin name, sorted: the names under `herald.plugin.` that NAMES lists,
    /// each read with GET.
    static func states(from herald: Herald) async throws(HeraldError) -> [(String, [String: JSONValue])] {
        let prefix = Herald.pluginStateName("")
        var states: [(String, [String: JSONValue])] = []
        for name in try await herald.names() where name.hasPrefix(prefix) {
            guard let value = try await herald.retainedValue(of: name), let state = value.userInfo else { continue }
            states.append((String(name.dropFirst(prefix.count)), state))
        }
        return states
    }

    /// The states as text: a line per plugin, then its file, provides and activation; the reason for a refused one.
    static func table(_ states: [(String, [String: JSONValue])]) -> String {
        guard !states.isEmpty else { return "no plugins\n" }
        func text(_ value: JSONValue?) -> String {
            switch value {
            case .string(let string): return string
            case .number(let number): return String(Int(number))
            case .array(let items): return items.compactMap(\.stringValue).joined(separator: " ")
            default: return "-"
            }
        }
        var out = ""
        for (name, state) in states {
            out += "\(name): \(text(state["state"]))"
            if case .number = state["pid"] { out += ", pid \(text(state["pid"]))" }
            out += ", \(text(state["restarts"])) restarts"
            if case .string(let exit) = state["lastExit"] { out += ", last \(exit)" }
            out += " since \(text(state["since"]))\n"
            out += "    file: \(text(state["file"]))\n"
            if case .string(let reason) = state["reason"] {
                out += "    refused: \(reason)\n"
            } else {
                let provides = text(state["provides"])
                out += "    provides: \(provides.isEmpty ? "-" : provides), activation: \(text(state["activation"]))\n"
            }
        }
        return out
    }
}
