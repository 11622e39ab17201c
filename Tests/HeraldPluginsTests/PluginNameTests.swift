import HeraldPlugins
import HeraldWire
import Testing

/// Every file name a plugin folder can hold becomes a plugin name or a refusal under a key, and either way
/// `herald.plugin.NAME` is a valid name: the daemon posts it, and an invalid one stopped heraldd (issue 27).
struct PluginNameTests {
    /// The names the issue found crashing heraldd, and more of their kind.
    @Test(arguments: [
        "my plugin", ".hidden", "", "a*b", "a..b", "a.b.", "a.b", " ", ".", "..", "*", "a\tb", "a\u{7F}b",
        "é", "a/b", "%", "%41", String(repeating: "a", count: 242), String(repeating: ".", count: 300),
    ])
    func aNameNoPluginMayHaveIsRefusedUnderAValidStatusName(stem: String) throws {
        let resolved = PluginName.resolve(stem: Array(stem.utf8))
        #expect(resolved.refusal != nil, "\(stem) should be refused")
        #expect(Name.isValid(PluginDeclaration.statusName(of: resolved.name)), "\(resolved.name)")
        #expect(resolved.name.hasPrefix("%"))
    }

    @Test(arguments: ["a", "session", "my-plugin_2", String(repeating: "z", count: PluginFile.maxNameBytes)])
    func aValidNameIsItsOwnName(stem: String) {
        let resolved = PluginName.resolve(stem: Array(stem.utf8))
        #expect(resolved.name == stem)
        #expect(resolved.refusal == nil)
    }

    /// Every single byte, every pair of a few telling bytes, lengths 0 to 300, and random names of any bytes
    /// (non-UTF-8 included): each makes a valid status name, refusals never take a valid plugin's name, and no
    /// two different stems share a key.
    @Test func everyFileNameMakesAValidStatusNameAndNoTwoShareIt() {
        var stems: [[UInt8]] = [[]]
        stems += (0...255).map { [UInt8($0)] }
        let telling: [UInt8] = [0x2E, 0x20, 0x2A, 0x25, 0x41, 0x7E, 0xFF, 0xC3, 0xA9, 0x00, 0x0A, 0x2F]
        for a in telling { for b in telling { stems.append([a, b]) } }
        for length in 0...300 {
            stems.append([UInt8](repeating: UInt8(ascii: "a"), count: length))
            stems.append([UInt8](repeating: UInt8(ascii: "."), count: length))
            stems.append([UInt8](repeating: 0xFF, count: length))
        }
        var generator = SplitMix(seed: 27)
        for _ in 0..<3000 {
            let length = Int(generator.next() % 301)
            stems.append((0..<length).map { _ in UInt8(truncatingIfNeeded: generator.next()) })
        }
        var owners: [String: [UInt8]] = [:]
        for stem in stems {
            let resolved = PluginName.resolve(stem: stem)
            #expect(Name.isValid(PluginDeclaration.statusName(of: resolved.name)), "stem \(stem)")
            #expect(resolved.name.utf8.count <= PluginFile.maxNameBytes)
            if resolved.refusal == nil {
                #expect((try? PluginFile.validateName(resolved.name)) != nil)
            } else {
                #expect((try? PluginFile.validateName(resolved.name)) == nil, "a refusal took a plugin's name")
            }
            if let owner = owners[resolved.name] {
                #expect(owner == stem, "\(owner) and \(stem) share \(resolved.name)")
            }
            owners[resolved.name] = stem
        }
    }

    /// Through the catalog, as the daemon reads a folder: every entry named `*.plugin` is decided, under a valid
    /// status name.
    @Test func theCatalogDecidesEveryPluginFileUnderAValidStatusName() {
        var generator = SplitMix(seed: 2027)
        var entries: [PluginCatalog.Entry] = []
        for _ in 0..<500 {
            let length = Int(generator.next() % 60)
            let stem = (0..<length).map { _ in UInt8(truncatingIfNeeded: generator.next() % 128) }
            let name = stem + Array(".plugin".utf8)
            entries.append(
                PluginCatalog.Entry(
                    fileNameBytes: name,
                    path: "/u/x",
                    contents: .text("[Plugin]\nExec=/bin/true\n"),
                    facts: FileFacts(owner: 1000, mode: 0o644)
                )
            )
        }
        let catalog = PluginCatalog(user: entries, system: [], daemonUID: 1000)
        let names = catalog.declarations.map(\.name) + catalog.refused.map(\.name)
        #expect(Set(names).count == Set(entries.map(\.fileNameBytes)).count)
        for name in names {
            #expect(Name.isValid(PluginDeclaration.statusName(of: name)), "\(name)")
        }
    }

    @Test func aFileThatIsNotARegularFileIsRefusedSayingWhatItIs() {
        let entry = PluginCatalog.Entry(
            fileName: "dir.plugin",
            path: "/u/dir.plugin",
            contents: .notAFile("a directory"),
            facts: FileFacts(owner: 1000, mode: 0o755)
        )
        let catalog = PluginCatalog(user: [entry], system: [], daemonUID: 1000)
        #expect(
            catalog.refused == [
                .init(name: "dir", path: "/u/dir.plugin", reason: "it is a directory, not a regular file")
            ]
        )
    }
}

/// A small deterministic generator, so a failure can be replayed.
struct SplitMix {
    var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
