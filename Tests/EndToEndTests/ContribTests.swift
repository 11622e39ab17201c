import Foundation
import HeraldTestSupport
import Testing

/// What contrib/ ships: manual pages, systemd units, the autostart entry and the shell completions, checked with
/// the real tools that read them.
struct ContribTests {
    static let heralddFlags = [
        "--socket", "--log-level", "--queue-bytes", "--max-payload", "--max-name-bytes", "--max-subscriptions",
        "--max-retained", "--max-retained-bytes", "--max-pattern-cost", "--max-names", "--max-connections",
        "--max-incomplete-connections", "--hello-timeout-ms", "--max-queued-bytes", "--max-wills", "--max-will-bytes",
        "--no-send-batching", "--coalesce-us", "--no-plugins", "--version", "--help",
    ]
    static let subcommands = [
        "post", "observe", "wait", "get", "status", "monitor", "names", "plugins", "dashboard", "demo", "help",
    ]
    static let observeFlags = [
        "--json", "--count", "--timeout", "--ready", "--overflow", "--reconnect", "--will", "--will-json",
        "--will-retain", "--will-delay",
    ]

    private func render(_ page: String, device: String) async throws -> CommandResult {
        try await SessionTools.run("groff", ["-man", "-T\(device)", "-ww", SessionTools.contrib("man/\(page)")])
    }

    @Test(.requires("groff"), arguments: ["heraldd.8", "herald.1", "herald-dbus-bridge.1"])
    func manualPageRendersWithoutWarnings(page: String) async throws {
        let result = try await render(page, device: "utf8")
        #expect(result.status == 0)
        #expect(result.stderr.isEmpty, "groff warned: \(result.stderr)")
        #expect(result.stdout.count > 2000)
    }

    @Test(.requires("groff")) func heralddPageDescribesEveryFlagTheEnvironmentExitCodesAndFiles() async throws {
        let text = try await render("heraldd.8", device: "ascii").stdout
        let plain = Self.stripOverstrike(text)
        for flag in Self.heralddFlags {
            #expect(plain.contains(flag), "heraldd.8 lacks \(flag)")
        }
        for word in [
            "ENVIRONMENT", "EXIT STATUS", "FILES", "HERALD_SOCKET", "XDG_RUNTIME_DIR", "LISTEN_FDS", "NOTIFY_SOCKET",
            "READY=1", "STOPPING=1", "socket.lock", "socket.plugins", "/tmp/herald-$UID/socket", "4194304", "268435456",
            "systemctl --user enable --now heraldd.socket",
        ] {
            #expect(plain.contains(word), "heraldd.8 lacks \(word)")
        }
    }

    @Test(.requires("groff")) func heraldPageDescribesEverySubcommandFlagAndExitCode() async throws {
        let plain = Self.stripOverstrike(try await render("herald.1", device: "ascii").stdout)
        for word in Self.subcommands.map({ "herald \($0)" }) + Self.observeFlags + ["--retain", "--socket"] {
            #expect(plain.contains(word), "herald.1 lacks \(word)")
        }
        for code in ["64", "69", "124", "130"] {
            #expect(plain.contains("       \(code)"), "herald.1 lacks exit status \(code)")
        }
        for word in ["HERALD_SOCKET", "XDG_RUNTIME_DIR", "herald-session-hook lock", "drop-oldest"] {
            #expect(plain.contains(word), "herald.1 lacks \(word)")
        }
    }

    /// Removes nroff's bold and underline overstrikes ("x\bx", "_\bx").
    static func stripOverstrike(_ text: String) -> String {
        var output: [Character] = []
        for character in text {
            if character == "\u{8}" {
                output.removeLast()
                continue
            }
            output.append(character)
        }
        return String(output)
    }

    @Test(.requires("systemd-analyze")) func systemdAcceptsTheUserUnits() async throws {
        let directory = TemporaryDirectory()
        // ExecStart names the installed binaries; point it at the built ones so that verify checks them too.
        for unit in ["heraldd.socket", "heraldd.service", "herald-session-hook.service"] {
            let text = try String(contentsOfFile: SessionTools.contrib("systemd/user/\(unit)"), encoding: .utf8)
                .replacingOccurrences(of: "/usr/local/bin/heraldd", with: TestBinaries.path("heraldd"))
                .replacingOccurrences(
                    of: "/usr/local/bin/herald-session-hook",
                    with: SessionTools.contrib("session/herald-session-hook")
                )
            try text.write(toFile: directory.file(unit), atomically: true, encoding: .utf8)
        }
        let result = try await SessionTools.run(
            "systemd-analyze",
            ["--user", "verify", "--man=no", "heraldd.socket", "heraldd.service", "herald-session-hook.service"]
                .map { $0.hasPrefix("-") || $0 == "verify" ? $0 : directory.file($0) },
            environment: ["XDG_RUNTIME_DIR": directory.path]
        )
        #expect(result.status == 0)
        // FileDescriptorStorePreserve= came with systemd 254; an older systemd ignores it (and keeps the stored
        // memfd only while the unit runs or restarts), saying so: the one warning allowed.
        let warnings = result.stderr.split(separator: "\n").filter {
            !$0.hasSuffix("Unknown key 'FileDescriptorStorePreserve' in section [Service], ignoring.")
        }
        #expect(result.stdout.isEmpty && warnings.isEmpty, "systemd-analyze: \(result.stdout)\(result.stderr)")
        let socket = try String(contentsOfFile: SessionTools.contrib("systemd/user/heraldd.socket"), encoding: .utf8)
        #expect(socket.contains("ListenStream=%t/herald/socket\n"))
        let service = try String(contentsOfFile: SessionTools.contrib("systemd/user/heraldd.service"), encoding: .utf8)
        #expect(service.contains("Type=notify\n"))
        // The state log's memfd lives in the descriptor store across crashes and restarts (issue 31).
        #expect(service.contains("FileDescriptorStoreMax=4\n") && service.contains("FileDescriptorStorePreserve=yes\n"))
        let execStart = service.split(separator: "\n").filter { $0.hasPrefix("ExecStart=") }
        #expect(execStart == ["ExecStart=/usr/local/bin/heraldd"], "under socket activation heraldd needs no --socket")
    }

    @Test(.requires("desktop-file-validate")) func autostartEntryIsValid() async throws {
        let result = try await SessionTools.run(
            "desktop-file-validate",
            [SessionTools.contrib("session/herald-session-hook.desktop")]
        )
        #expect(result.status == 0)
        #expect(result.stdout.isEmpty, "\(result.stdout)")
    }

    @Test(.requires("sh")) func sessionHookIsPOSIXShell() async throws {
        // dash is Debian's /bin/sh and knows no bashisms; -n parses without running.
        let result = try await SessionTools.run("sh", ["-n", SessionTools.contrib("session/herald-session-hook")])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(FileManager.default.isExecutableFile(atPath: SessionTools.contrib("session/herald-session-hook")))
    }

    // MARK: Completions

    /// Runs the bash completion for `words` (the last one is being completed) and returns the candidates.
    private func bashComplete(_ words: [String], environment: [String: String?] = [:]) async throws -> CommandResult {
        let quoted = words.map { "'\($0)'" }.joined(separator: " ")
        let script = """
            source '\(SessionTools.contrib("completions/herald.bash"))'
            COMP_WORDS=(\(quoted)); COMP_CWORD=\(words.count - 1); COMPREPLY=()
            _herald
            printf '%s\\n' "${COMPREPLY[@]}"
            """
        return try await SessionTools.run("bash", ["--norc", "-c", script], environment: environment)
    }

    @Test(.requires("bash")) func bashCompletesSubcommandsAndFlags() async throws {
        let top = try await bashComplete(["herald", ""])
        #expect(Set(top.stdout.split(separator: "\n").map(String.init)).isSuperset(of: Self.subcommands))
        #expect(try await bashComplete(["herald", "ob"]).stdout == "observe\n")
        let observe = Set(
            try await bashComplete(["herald", "observe", "--"]).stdout.split(separator: "\n").map(String.init)
        )
        #expect(observe.isSuperset(of: Self.observeFlags + ["--socket", "--help"]))
        let overflow = try await bashComplete(["herald", "observe", "--overflow", ""]).stdout
        #expect(overflow == "drop-oldest\ncoalesce\ndisconnect\n")
        #expect(try await bashComplete(["herald", "post", "a.b", "--r"]).stdout == "--retain\n")
    }

    @Test(.requires("bash")) func bashCompletesNamesFromTheDaemonAndStaysQuietWithoutOne() async throws {
        let daemon = try await TestDaemon.start()
        #expect(
            try await run(
                "herald",
                ["post", "session.state", "state=away", "--retain"],
                environment: daemon.environment
            ).status == 0
        )
        let path = TestBinaries.directory + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
        var environment = daemon.environment
        environment["PATH"] = path
        let names = try await run("herald", ["names"], environment: daemon.environment)
        let completed = try await bashComplete(["herald", "get", "sess"], environment: environment)
        if names.status == 0 {
            #expect(completed.stdout == "session.state\n")
        } else {
            // `herald names` is not there yet: the completion offers nothing and says nothing.
            #expect(completed.stdout.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty)
        }
        #expect(completed.stderr.isEmpty, "\(completed.stderr)")
        // No daemon at all: quiet too.
        environment["HERALD_SOCKET"] = daemon.directory.file("nobody")
        let quiet = try await bashComplete(["herald", "get", "sess"], environment: environment)
        #expect(quiet.stdout.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty)
        #expect(quiet.stderr.isEmpty, "\(quiet.stderr)")
    }

    @Test(.requires("fish")) func fishCompletesSubcommandsAndFlags() async throws {
        let file = SessionTools.contrib("completions/herald.fish")
        let result = try await SessionTools.run(
            "fish",
            [
                "--no-config", "-c",
                "source '\(file)'; complete -C 'herald '; echo ---; complete -C 'herald observe --'; echo ---;"
                    + " complete -C 'herald observe --overflow '; echo ---; complete -C 'herald get sess'",
            ],
            environment: ["HERALD_SOCKET": "/nonexistent/socket"]
        )
        #expect(result.status == 0)
        #expect(result.stderr.isEmpty, "\(result.stderr)")
        let sections = result.stdout.components(separatedBy: "---\n").map {
            Set($0.split(separator: "\n").map { String($0.split(separator: "\t")[0]) })
        }
        #expect(sections.count == 4)
        #expect(sections[0].isSuperset(of: Self.subcommands))
        #expect(sections[1].isSuperset(of: Self.observeFlags + ["--socket", "--help"]))
        #expect(sections[2] == ["drop-oldest", "coalesce", "disconnect"])
        #expect(sections[3].isEmpty)
    }

    @Test(.requires("zsh")) func zshCompletionParsesAndOffersEverySubcommandAndObserveFlag() async throws {
        let file = SessionTools.contrib("completions/_herald")
        let parse = try await SessionTools.run("zsh", ["-n", file])
        #expect(parse.status == 0, "\(parse.stderr)")
        // Drive the completion function with the completion system's entry points stubbed to print what they are
        // given: the subcommand list for `herald <TAB>`, and observe's option specs for `herald observe <TAB>`.
        let script = """
            _arguments() { if [[ $1 == -C ]]; then state=$TEST_STATE; return 1; fi; print -rl -- "$@"; return 0 }
            _describe() { print -rl -- ${(P)${@[-1]}} }
            _files() { }
            source '\(file)' >/dev/null 2>&1
            TEST_STATE=subcommand; words=(herald ''); CURRENT=2; _herald
            print -- ---
            TEST_STATE=argument; words=(observe ''); CURRENT=2; _herald
            """
        let result = try await SessionTools.run("zsh", ["-f", "-c", script])
        #expect(result.status == 0, "\(result.stderr)")
        let sections = result.stdout.components(separatedBy: "---\n")
        #expect(sections.count == 2)
        let listed = Set(sections[0].split(separator: "\n").map { String($0.split(separator: ":")[0]) })
        #expect(listed == Set(Self.subcommands))
        for flag in Self.observeFlags {
            #expect(sections.last?.contains("\(flag)[") == true, "_herald observe lacks \(flag)")
        }
    }
}
