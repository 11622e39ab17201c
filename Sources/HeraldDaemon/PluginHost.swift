import HeraldPlugins
import HeraldPosix

/// What heraldd keeps for its plugins: the supervisor that decides, the folders it reads, and the output pipes of
/// the children it started. The daemon carries out the supervisor's actions (Daemon+Plugins.swift).
struct PluginHost {
    /// The folders plugin files are read from, the user's first.
    struct Folders: Sendable {
        /// `$XDG_CONFIG_HOME/herald/plugins`, default `~/.config/herald/plugins`.
        var user: String?
        /// Each `$XDG_DATA_DIRS/herald/plugins`, default `/usr/local/share:/usr/share`.
        var system: [String]

        /// The folders the XDG base directory rules give for this process's environment.
        static func fromEnvironment() -> Folders {
            var user: String?
            if let config = ProcessEnvironment.value("XDG_CONFIG_HOME"), config.hasPrefix("/") {
                user = config + "/herald/plugins"
            } else if let home = ProcessEnvironment.value("HOME"), home.hasPrefix("/") {
                user = home + "/.config/herald/plugins"
            }
            let data =
                ProcessEnvironment.value("XDG_DATA_DIRS").flatMap { $0.isEmpty ? nil : $0 }
                ?? "/usr/local/share:/usr/share"
            let system = data.split(separator: ":").filter { $0.hasPrefix("/") }.map { String($0) + "/herald/plugins" }
            return Folders(user: user, system: system)
        }
    }

    /// One child's stdout and stderr, which share a pipe so their lines stay in the order written.
    final class Output {
        let descriptor: FileDescriptor
        let plugin: String
        var lines = OutputLines()

        init(descriptor: consuming FileDescriptor, plugin: String) {
            self.descriptor = descriptor
            self.plugin = plugin
        }
    }

    /// Whether heraldd supervises plugins at all (`--no-plugins` turns it off).
    let enabled: Bool
    let folders: Folders
    var supervisor = Supervisor()
    /// The output pipes, by descriptor.
    var outputs: [Int32: Output] = [:]
    /// The loop's timer for when the supervisor asked to be woken.
    var wakeTimer: TimerID?
    /// The loop's timer for looking at the counts of dropped output lines, while some are owed.
    var countsTimer: TimerID?
    /// Set once every plugin has exited after shutdown began (or there were none).
    var shutdownComplete = false
    /// The soft descriptor limit heraldd was started with, which its children get back.
    let inheritedDescriptorLimit: UInt64

    init(enabled: Bool, folders: Folders, inheritedDescriptorLimit: UInt64) {
        self.enabled = enabled
        self.folders = folders
        self.inheritedDescriptorLimit = inheritedDescriptorLimit
        shutdownComplete = !enabled
    }

    /// Reads the folders into a catalog: every file's text and its owner and mode, then each plugin's program,
    /// found in `searchPath` when it is a bare name, with its owner and mode.
    func readCatalog(daemonUID: UInt32, searchPath: String) -> PluginCatalog {
        let user = folders.user.map(Self.entries(in:)) ?? []
        let system = folders.system.map(Self.entries(in:))
        let catalog = PluginCatalog(user: user, system: system, daemonUID: daemonUID)
        var lookups: [String: PluginCatalog.ExecutableLookup] = [:]
        for declaration in catalog.declarations {
            let program = declaration.program
            let path = program.hasPrefix("/") ? program : FileSystem.findExecutable(program, in: searchPath)
            guard let path else {
                lookups[declaration.name] = .notFound("'\(program)' not found in PATH (\(searchPath))")
                continue
            }
            do {
                let status = try FileSystem.status(of: path)
                guard status.isRegularFile, status.isExecutable else {
                    lookups[declaration.name] = .notFound("\(path) is not an executable file")
                    continue
                }
                lookups[declaration.name] = .found(
                    path: path,
                    facts: FileFacts(owner: status.ownerUID, mode: status.permissions)
                )
            } catch {
                lookups[declaration.name] = .notFound("\(path): \(error.errno)")
            }
        }
        return catalog.checkingExecutables(lookups, daemonUID: daemonUID)
    }

    /// The `*.plugin` files of `folder` (none when it does not exist), read whole, at most 64 KiB each.
    private static func entries(in folder: String) -> [PluginCatalog.Entry] {
        guard let names = try? FileSystem.entries(of: folder) else { return [] }
        return names.compactMap { name -> PluginCatalog.Entry? in
            guard PluginFile.name(ofFileName: name) != nil else { return nil }
            let path = folder + "/" + name
            guard let status = try? FileSystem.status(of: path), status.isRegularFile else { return nil }
            let contents: PluginCatalog.Contents
            do {
                contents = .text(String(decoding: try FileSystem.contents(of: path, limit: 65536), as: UTF8.self))
            } catch {
                contents = .unreadable("\(error)")
            }
            return PluginCatalog.Entry(
                fileName: name,
                path: path,
                contents: contents,
                facts: FileFacts(owner: status.ownerUID, mode: status.permissions)
            )
        }
    }
}
