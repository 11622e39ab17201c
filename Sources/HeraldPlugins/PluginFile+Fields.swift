import HeraldWire

extension PluginFile {
    /// The keys of a plugin file as they are read, each value checked on its own line so an error names that line.
    struct Fields {
        private(set) var command: [String]?
        private(set) var description: String?
        private(set) var provides: [Pattern]?
        private(set) var activation: (value: Activation, line: Int)?
        private(set) var restart: RestartPolicy?
        private(set) var environment: [EnvironmentVariable] = []
        private(set) var workingDirectory: String?
        private(set) var enabled: Bool?
        /// Where each key was first seen, to word a repeat.
        private var seen: [String: Int] = [:]

        /// Reads one `key=value` line.
        mutating func set(_ key: String, _ value: String, line: Int) throws(PluginFileError) {
            if key != "Environment", let first = seen[key] {
                throw PluginFileError(line: line, "duplicate key '\(key)' (first on line \(first))")
            }
            func bad(_ reason: String) -> PluginFileError { PluginFileError(line: line, reason) }
            switch key {
            case "Exec":
                command = try Self.command(value, line: line)
            case "Description":
                description = value
            case "Provides":
                provides = try Self.patterns(value, line: line)
            case "Activation":
                guard let parsed = Activation(rawValue: value) else {
                    throw bad("Activation= must be start, subscribe or manual, not '\(value)'")
                }
                activation = (parsed, line)
            case "Restart":
                guard let parsed = RestartPolicy(rawValue: value) else {
                    throw bad("Restart= must be on-failure, always or no, not '\(value)'")
                }
                restart = parsed
            case "Environment":
                guard let equals = value.firstIndex(of: "=") else {
                    throw bad("Environment= must be KEY=VALUE, not '\(value)'")
                }
                let name = String(value[..<equals])
                guard EnvironmentVariable.isValidKey(name) else {
                    throw bad("Environment= variable name '\(name)' is not letters, digits and '_'")
                }
                // heraldd sets these two for every plugin; a second copy in envp is one value for the shell and the
                // other for getenv().
                if EnvironmentVariable.reservedKeys.contains(name) {
                    throw bad("Environment= may not set \(name): heraldd sets it for every plugin")
                }
                environment.append(EnvironmentVariable(key: name, value: String(value[value.index(after: equals)...])))
            case "WorkingDirectory":
                guard value.hasPrefix("/") else {
                    throw bad("WorkingDirectory= must be an absolute path, not '\(value)'")
                }
                workingDirectory = value
            case "Enabled":
                switch value {
                case "true": enabled = true
                case "false": enabled = false
                default: throw bad("Enabled= must be true or false, not '\(value)'")
                }
            default:
                throw bad("unknown key '\(key)'")
            }
            seen[key] = seen[key] ?? line
        }

        /// The file these keys make.
        func file(name: String, path: String) throws(PluginFileError) -> PluginFile {
            if seen.isEmpty || enabled == false { return .mask }
            guard let command else { throw PluginFileError(line: nil, "missing Exec=") }
            let provides = provides ?? []
            if let activation, activation.value == .subscribe, provides.isEmpty {
                throw PluginFileError(
                    line: activation.line,
                    "Activation=subscribe needs Provides=, the patterns that activate the plugin"
                )
            }
            return .plugin(
                PluginDeclaration(
                    name: name,
                    path: path,
                    command: command,
                    description: description,
                    provides: provides,
                    activation: activation?.value ?? (provides.isEmpty ? .manual : .subscribe),
                    restart: restart ?? .onFailure,
                    environment: environment,
                    workingDirectory: workingDirectory
                )
            )
        }

        private static func command(_ value: String, line: Int) throws(PluginFileError) -> [String] {
            let words: [String]
            do {
                words = try ExecLine.split(value)
            } catch {
                throw PluginFileError(line: line, "Exec= \(error.reason)")
            }
            guard let program = words.first, !program.isEmpty else {
                throw PluginFileError(line: line, "Exec= names no program")
            }
            if !program.hasPrefix("/") && program.contains("/") {
                throw PluginFileError(
                    line: line,
                    "Exec= program '\(program)' must be an absolute path or a bare name looked up in PATH"
                )
            }
            return words
        }

        private static func patterns(_ value: String, line: Int) throws(PluginFileError) -> [Pattern] {
            let texts = value.split(whereSeparator: { $0 == ";" || $0 == " " || $0 == "\t" })
            if texts.isEmpty { throw PluginFileError(line: line, "Provides= names no pattern") }
            var patterns: [Pattern] = []
            for text in texts {
                let pattern: Pattern
                do {
                    pattern = try Pattern(String(text))
                } catch {
                    throw PluginFileError(line: line, "Provides= \(error.reason)")
                }
                // Only the daemon posts under herald.; a plugin is a client and cannot provide those names.
                if case .literal(Name.reservedPrefix) = pattern.segments.first {
                    throw PluginFileError(line: line, "Provides= '\(text)': names under herald. are the daemon's")
                }
                if !patterns.contains(pattern) { patterns.append(pattern) }
            }
            return patterns
        }
    }
}
