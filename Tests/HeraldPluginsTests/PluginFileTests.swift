import HeraldPlugins
import HeraldWire
import Testing

struct PluginFileTests {
    private func parse(_ text: String, name: String = "session") throws(PluginFileError) -> PluginFile {
        try PluginFile(name: name, path: "/p/\(name).plugin", text: text)
    }

    private func declaration(_ text: String) throws -> PluginDeclaration {
        guard case .plugin(let declaration) = try parse(text) else {
            Issue.record("parsed as a mask")
            throw PluginFileError(line: nil, "mask")
        }
        return declaration
    }

    @Test func readsEveryKeyOfAFullFile() throws {
        let text = """
            # The session hook, supervised.
            [Plugin]
            Exec = /usr/bin/herald-session-hook --verbose
            Description=Screen lock and unlock as session.* notifications
            Provides=session.*; session.state
            Activation=start
            Restart=always
            Environment=LANG=C.UTF-8
            Environment=GREETING=a=b
            WorkingDirectory=/tmp
            Enabled=true
            """
        let parsed = try declaration(text)
        #expect(parsed.name == "session")
        #expect(parsed.path == "/p/session.plugin")
        #expect(parsed.command == ["/usr/bin/herald-session-hook", "--verbose"])
        #expect(parsed.program == "/usr/bin/herald-session-hook")
        #expect(parsed.description == "Screen lock and unlock as session.* notifications")
        #expect(parsed.provides.map(\.text) == ["session.*", "session.state"])
        #expect(parsed.activation == .start)
        #expect(parsed.restart == .always)
        #expect(parsed.environment.map(\.assignment) == ["LANG=C.UTF-8", "GREETING=a=b"])
        #expect(parsed.workingDirectory == "/tmp")
        #expect(parsed.executable == nil)
        #expect(parsed.statusName == "herald.plugin.session")
    }

    @Test func defaultsToSubscribeActivationWhenTheFileProvidesNames() throws {
        let parsed = try declaration("[Plugin]\nExec=bridge\nProvides=mqtt.**")
        #expect(parsed.activation == .subscribe)
        #expect(parsed.restart == .onFailure)
    }

    @Test func defaultsToManualActivationWithoutProvides() throws {
        let parsed = try declaration("[Plugin]\nExec=bridge")
        #expect(parsed.activation == .manual)
        #expect(parsed.provides.isEmpty)
    }

    @Test func acceptsCRLFLinesAndSemicolonComments() throws {
        let parsed = try declaration("; written on Windows\r\n[Plugin]\r\nExec=/bin/true\r\nDescription=x \r\n")
        #expect(parsed.command == ["/bin/true"])
        #expect(parsed.description == "x")
    }

    @Test(arguments: [
        (#"/bin/sh -c "echo hello; exit 1""#, ["/bin/sh", "-c", "echo hello; exit 1"]),
        (#"prog 'single quoted $HOME' plain"#, ["prog", "single quoted $HOME", "plain"]),
        (#"prog a\ b c\\d"#, ["prog", "a b", #"c\d"#]),
        (#"prog "say \"hi\"" "back\\slash" "keep\n""#, ["prog", #"say "hi""#, #"back\slash"#, #"keep\n"#]),
        (#"prog --name="a b" '' """#, ["prog", "--name=a b", "", ""]),
        ("prog\t  spaced   out ", ["prog", "spaced", "out"]),
    ])
    func splitsExecWithDesktopFileQuoting(exec: String, words: [String]) throws {
        #expect(try declaration("[Plugin]\nExec=\(exec)").command == words)
    }

    @Test(arguments: [
        "",
        "\n  \n",
        "# nothing here\n; or here\n",
        "[Plugin]\n# only the header\n",
        "[Plugin]\nEnabled=false\n",
        "[Plugin]\nExec=/bin/true\nEnabled=false\n",
        "[Plugin]\nEnabled=false\nDescription=masked, and Exec= may be missing\n",
    ])
    func readsAnEmptyOrDisabledFileAsAMask(text: String) throws {
        #expect(try parse(text) == .mask)
    }

    @Test(arguments: [
        ("[Plugin]\nExec=/bin/true\n\nFoo=bar", "line 4: unknown key 'Foo'"),
        ("[Plugin]\nDescription=x", "missing Exec="),
        ("Exec=/bin/true\n[Plugin]", "line 1: key 'Exec' is outside the [Plugin] section"),
        ("[Service]\nExec=/bin/true", "line 1: unknown section '[Service]'; the only section is [Plugin]"),
        ("[Plugin]\n[Plugin]", "line 2: a second [Plugin] section (the first is on line 1)"),
        ("[Plugin\nExec=/bin/true", "line 1: a section header must end with ']': '[Plugin'"),
        ("[Plugin]\nExec=/bin/true\nExec=/bin/false", "line 3: duplicate key 'Exec' (first on line 2)"),
        ("[Plugin]\nRestart=no\nRestart=always", "line 3: duplicate key 'Restart' (first on line 2)"),
        ("[Plugin]\nExec /bin/true", "line 2: expected Key=Value, found 'Exec /bin/true'"),
        ("[Plugin]\n=value", "line 2: expected Key=Value, found '=value'"),
        ("[Plugin]\nExec=", "line 2: Exec= names no program"),
        ("[Plugin]\nExec=\"/bin/true", "line 2: Exec= unterminated double quote"),
        ("[Plugin]\nExec='/bin/true", "line 2: Exec= unterminated single quote"),
        ("[Plugin]\nExec=/bin/true\\", "line 2: Exec= ends in a lone backslash"),
        (
            "[Plugin]\nExec=bin/bridge",
            "line 2: Exec= program 'bin/bridge' must be an absolute path or a bare name looked up in PATH"
        ),
        ("[Plugin]\nExec=x\nActivation=later", "line 3: Activation= must be start, subscribe or manual, not 'later'"),
        ("[Plugin]\nExec=x\nRestart=sometimes", "line 3: Restart= must be on-failure, always or no, not 'sometimes'"),
        ("[Plugin]\nExec=x\nEnabled=yes", "line 3: Enabled= must be true or false, not 'yes'"),
        ("[Plugin]\nExec=x\nEnvironment=NOVALUE", "line 3: Environment= must be KEY=VALUE, not 'NOVALUE'"),
        (
            "[Plugin]\nExec=x\nEnvironment=1A=b",
            "line 3: Environment= variable name '1A' is not letters, digits and '_'"
        ),
        (
            "[Plugin]\nExec=x\nEnvironment=A-B=c",
            "line 3: Environment= variable name 'A-B' is not letters, digits and '_'"
        ),
        ("[Plugin]\nExec=x\nWorkingDirectory=tmp", "line 3: WorkingDirectory= must be an absolute path, not 'tmp'"),
        ("[Plugin]\nExec=x\nProvides= ; ", "line 3: Provides= names no pattern"),
        (
            "[Plugin]\nExec=x\nProvides=a.**.b",
            "line 3: Provides= invalid pattern \"a.**.b\": '**' is allowed only as the last segment"
        ),
        (
            "[Plugin]\nExec=x\nProvides=herald.plugin.x",
            "line 3: Provides= 'herald.plugin.x': names under herald. are the daemon's"
        ),
        (
            "[Plugin]\nActivation=subscribe\nExec=x",
            "line 2: Activation=subscribe needs Provides=, the patterns that activate the plugin"
        ),
        // Issue 27: both values would reach the plugin, one for the shell and the other for getenv().
        (
            "[Plugin]\nExec=x\nEnvironment=HERALD_SOCKET=/tmp/s",
            "line 3: Environment= may not set HERALD_SOCKET: heraldd sets it for every plugin"
        ),
        (
            "[Plugin]\nExec=x\nEnvironment=HERALD_PLUGIN=other",
            "line 3: Environment= may not set HERALD_PLUGIN: heraldd sets it for every plugin"
        ),
        // Issue 27: a NUL silently cut the argument it was in.
        ("[Plugin]\nExec=/bin/echo ab\0cd", "line 2: a NUL byte; a plugin file is text"),
        ("\0", "line 1: a NUL byte; a plugin file is text"),
        ("[Plugin]\nExec=x\n# comment \0\n", "line 3: a NUL byte; a plugin file is text"),
    ])
    func refusesABadFileNamingTheLineAndTheReason(text: String, message: String) {
        #expect(throws: PluginFileError.self) { try parse(text) }
        do {
            _ = try parse(text)
        } catch {
            #expect(error.description == message)
        }
    }

    @Test(arguments: [
        ("a.b", "the plugin name 'a.b' may only have letters, digits, '-' and '_'"),
        ("", "the plugin name (the file name before .plugin) is empty"),
        ("with space", "the plugin name 'with space' may only have letters, digits, '-' and '_'"),
        (String(repeating: "x", count: 242), "the plugin name is 242 bytes, the limit is 241"),
    ])
    func refusesANameThatIsNotOneNameSegment(name: String, message: String) {
        #expect(throws: PluginFileError(line: nil, message)) { try parse("[Plugin]\nExec=x", name: name) }
    }

    @Test func acceptsTheLongestNameWhoseStatusNameIsAName() throws {
        let name = String(repeating: "x", count: PluginFile.maxNameBytes)
        guard case .plugin(let parsed) = try parse("[Plugin]\nExec=x", name: name) else {
            Issue.record("not a plugin")
            return
        }
        #expect(Name.isValid(parsed.statusName))
        #expect(parsed.statusName.utf8.count == Limits.maxNameBytes)
    }

    @Test(arguments: [
        ("session.plugin", "session"),
        ("mqtt-bridge.plugin", "mqtt-bridge"),
        ("README", nil),
        ("session.plugin.bak", nil),
        ("session.plugin~", nil),
    ])
    func takesThePluginNameFromTheFileName(fileName: String, name: String?) {
        #expect(PluginFile.name(ofFileName: fileName) == name)
    }
}
