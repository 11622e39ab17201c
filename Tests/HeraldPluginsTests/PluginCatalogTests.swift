import HeraldPlugins
import Testing

struct PluginCatalogTests {
    private static let uid: UInt32 = 1000
    private static let good = FileFacts(owner: uid, mode: 0o100644)

    private func entry(
        _ fileName: String,
        in directory: String,
        _ text: String = "[Plugin]\nExec=/bin/true",
        facts: FileFacts = good
    ) -> PluginCatalog.Entry {
        PluginCatalog.Entry(fileName: fileName, path: "\(directory)/\(fileName)", contents: .text(text), facts: facts)
    }

    private func catalog(user: [PluginCatalog.Entry], system: [[PluginCatalog.Entry]] = []) -> PluginCatalog {
        PluginCatalog(user: user, system: system, daemonUID: Self.uid)
    }

    @Test func aUserFileOverridesASystemFileOfTheSameName() {
        let result = catalog(
            user: [entry("a.plugin", in: "/u", "[Plugin]\nExec=/usr/local/bin/mine")],
            system: [[entry("a.plugin", in: "/s1"), entry("b.plugin", in: "/s1")]]
        )
        #expect(result.declarations.map(\.path) == ["/u/a.plugin", "/s1/b.plugin"])
        #expect(result.declarations.first?.command == ["/usr/local/bin/mine"])
        #expect(result.refused.isEmpty)
    }

    @Test(arguments: ["", "# masked\n", "[Plugin]\nEnabled=false\n"])
    func aUserMaskHidesTheSystemFile(mask: String) {
        let result = catalog(user: [entry("a.plugin", in: "/u", mask)], system: [[entry("a.plugin", in: "/s1")]])
        #expect(result.declarations.isEmpty)
        #expect(result.masked == [PluginCatalog.Mask(name: "a", path: "/u/a.plugin")])
    }

    @Test func theFirstSystemDirectoryWinsAmongSystemDirectories() {
        let result = catalog(
            user: [],
            system: [[entry("a.plugin", in: "/usr/local/share")], [entry("a.plugin", in: "/usr/share")]]
        )
        #expect(result.declarations.map(\.path) == ["/usr/local/share/a.plugin"])
    }

    @Test func aRefusedUserFileStillHidesTheSystemFile() {
        let result = catalog(
            user: [entry("a.plugin", in: "/u", "[Plugin]\nExec=/bin/true\nFoo=1")],
            system: [[entry("a.plugin", in: "/s1")]]
        )
        #expect(result.declarations.isEmpty)
        #expect(result.refused == [.init(name: "a", path: "/u/a.plugin", reason: "line 3: unknown key 'Foo'")])
    }

    @Test func ignoresFilesThatAreNotPluginFiles() {
        let result = catalog(user: [entry("README", in: "/u"), entry("a.plugin.bak", in: "/u")])
        #expect(result.declarations.isEmpty)
        #expect(result.refused.isEmpty)
    }

    @Test(arguments: [
        (FileFacts(owner: 1001, mode: 0o100644), "owned by uid 1001, not by 1000 or root"),
        (FileFacts(owner: 1000, mode: 0o100664), "writable by group or others (mode 0664)"),
        (FileFacts(owner: 0, mode: 0o100646), "writable by group or others (mode 0646)"),
        (FileFacts(owner: 1000, mode: 0o102666), "writable by group or others (mode 2666)"),
    ])
    func refusesAFileAnotherUserCouldHaveWritten(facts: FileFacts, reason: String) {
        let result = catalog(user: [entry("a.plugin", in: "/u", facts: facts), entry("b.plugin", in: "/u")])
        #expect(result.refused == [.init(name: "a", path: "/u/a.plugin", reason: reason)])
        #expect(result.declarations.map(\.name) == ["b"])
    }

    @Test(arguments: [
        FileFacts(owner: 1000, mode: 0o100644), FileFacts(owner: 0, mode: 0o100755),
        FileFacts(owner: 1000, mode: 0o600),
    ])
    func trustsAFileOfTheDaemonsUserOrRootThatOnlyTheOwnerCanWrite(facts: FileFacts) {
        #expect(facts.trustProblem(daemonUID: Self.uid) == nil)
    }

    @Test func refusesAnUnreadableFileOrABadNameAndLoadsTheRest() {
        let unreadable = PluginCatalog.Entry(
            fileName: "c.plugin",
            path: "/u/c.plugin",
            contents: .unreadable("Permission denied (errno 13)"),
            facts: Self.good
        )
        let result = catalog(user: [unreadable, entry("a.b.plugin", in: "/u"), entry("ok.plugin", in: "/u")])
        #expect(
            result.refused == [
                // Shown under a key that makes a valid herald.plugin.KEY: "a.b" would not (issue 27).
                .init(
                    name: "%a%2Eb",
                    path: "/u/a.b.plugin",
                    reason: "the plugin name 'a.b' may only have letters, digits, '-' and '_'"
                ),
                .init(name: "c", path: "/u/c.plugin", reason: "cannot read: Permission denied (errno 13)"),
            ]
        )
        #expect(result.declarations.map(\.name) == ["ok"])
    }

    @Test func checkingExecutablesRecordsTheCheckedPathAndRefusesTheRest() {
        let result = catalog(
            user: [
                entry("found.plugin", in: "/u", "[Plugin]\nExec=bridge --x"),
                entry("open.plugin", in: "/u", "[Plugin]\nExec=/opt/open"),
                entry("foreign.plugin", in: "/u", "[Plugin]\nExec=/opt/foreign"),
                entry("missing.plugin", in: "/u", "[Plugin]\nExec=nowhere"),
                entry("unchecked.plugin", in: "/u"),
            ]
        ).checkingExecutables(
            [
                "found": .found(path: "/usr/bin/bridge", facts: FileFacts(owner: 0, mode: 0o100755)),
                "open": .found(path: "/opt/open", facts: FileFacts(owner: 1000, mode: 0o100777)),
                "foreign": .found(path: "/opt/foreign", facts: FileFacts(owner: 1001, mode: 0o100755)),
                "missing": .notFound("'nowhere' not found in PATH"),
            ],
            daemonUID: Self.uid
        )
        #expect(result.declarations.map(\.name) == ["found"])
        #expect(result.declarations.first?.executable == "/usr/bin/bridge")
        #expect(result.declarations.first?.command == ["bridge", "--x"])
        #expect(
            result.refused.map(\.reason) == [
                "executable /opt/foreign: owned by uid 1001, not by 1000 or root",
                "executable 'nowhere' not found in PATH",
                "executable /opt/open: writable by group or others (mode 0777)",
                "executable '/bin/true' was not checked",
            ]
        )
    }
}
