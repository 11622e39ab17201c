import HeraldPlugins
import HeraldPosix

/// Reading the plugin folders a share at a time: listing them is one turn's work, reading thousands of files is
/// spread over turns (``filesPerTurn`` a turn), so clients are served while heraldd starts or reloads.
extension PluginHost {
    /// Files read in one turn of the loop.
    static let filesPerTurn = 128

    /// A reading of the folders under way.
    struct FolderRead {
        /// Each `*.plugin` name still to read, with the index of its folder in ``folders``.
        var pending: [(folder: Int, name: [UInt8])]
        var next = 0
        /// The folders, the user's first when there is one.
        var folders: [String]
        var hasUserFolder: Bool
        /// The entries read so far, by folder.
        var entries: [[PluginCatalog.Entry]]
        /// Whether this is the reading at start-up (then the daemon has started plugins only once it is done).
        var isStartup: Bool
        /// Whether another reload was asked for meanwhile: read again once this one is applied.
        var again = false

        /// Whether every file has been read.
        var isDone: Bool { next == pending.count }
    }

    /// Lists the folders (one `getdents` each): the reading's first step.
    func beginRead(isStartup: Bool) -> FolderRead {
        let all = [folders.user].compactMap { $0 } + folders.system
        var pending: [(folder: Int, name: [UInt8])] = []
        for (index, folder) in all.enumerated() {
            for name in (try? FileSystem.entryBytes(of: folder)) ?? [] where PluginName.resolve(fileName: name) != nil {
                pending.append((index, name))
            }
        }
        return FolderRead(
            pending: pending,
            folders: all,
            hasUserFolder: folders.user != nil,
            entries: Array(repeating: [], count: all.count),
            isStartup: isStartup
        )
    }

    /// Reads the next ``filesPerTurn`` files of `read`.
    static func readSome(_ read: inout FolderRead) {
        let end = min(read.next + filesPerTurn, read.pending.count)
        for index in read.next..<end {
            let (folder, name) = read.pending[index]
            // Parsed here, a share a turn, rather than all at once when the catalog is made.
            read.entries[folder].append(entry(folder: read.folders[folder], name: name).parsingText())
        }
        read.next = end
    }

    /// The catalog of a finished reading: the entries read, then each plugin's program, found in `searchPath` when
    /// it is a bare name, with its owner and mode.
    func catalog(of read: FolderRead, daemonUID: UInt32, searchPath: String) -> PluginCatalog {
        let user = read.hasUserFolder ? read.entries[0] : []
        let system = Array(read.entries.dropFirst(read.hasUserFolder ? 1 : 0))
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

    /// The entry `name` of `folder`: its file read whole (at most 64 KiB), or what it is when it is no regular
    /// file, so the catalog refuses it where people look.
    private static func entry(folder: String, name: [UInt8]) -> PluginCatalog.Entry {
        let path = folder + "/" + String(decoding: name, as: UTF8.self)
        func entry(_ contents: PluginCatalog.Contents, _ facts: FileFacts) -> PluginCatalog.Entry {
            PluginCatalog.Entry(fileNameBytes: name, path: path, contents: contents, facts: facts)
        }
        // A name that is not UTF-8 cannot be opened by its repaired path; the catalog refuses it by name.
        guard String(validating: name, as: UTF8.self) != nil else {
            return entry(.unreadable("the file name is not UTF-8"), FileFacts(owner: 0, mode: 0o644))
        }
        let status: FileSystem.Status
        do {
            status = try FileSystem.status(of: path)
        } catch {
            let what = FileSystem.isSymbolicLink(path) ? "a symbolic link to nothing" : "unreadable: \(error)"
            return entry(.notAFile(what), FileFacts(owner: 0, mode: 0o644))
        }
        let facts = FileFacts(owner: status.ownerUID, mode: status.permissions)
        guard status.isRegularFile else { return entry(.notAFile(status.kind), facts) }
        do {
            return entry(.text(String(decoding: try FileSystem.contents(of: path, limit: 65536), as: UTF8.self)), facts)
        } catch {
            return entry(.unreadable("\(error)"), facts)
        }
    }
}
