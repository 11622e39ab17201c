/// The effective set of plugins, decided from directory listings the owner has read: which files load, which are
/// masked, and which are refused and why.
///
/// The rules, after systemd's unit search path:
/// - The user's directory comes first, then each system directory in order. The first file of a NAME wins and
///   hides every later one, even when it is refused or a mask, so what `herald plugins` reports is always the file
///   that decides.
/// - A mask (an empty file, or `Enabled=false`) makes no plugin of its NAME run.
/// - A file not owned by the daemon's user or root, or writable by group or others, is refused unread.
/// - Entries whose file name does not end in `.plugin` are ignored. Every other entry is decided: one whose name is
///   no plugin name is refused under its ``PluginName`` key, and one that is not a regular file (a directory, a
///   FIFO, a dangling link) is refused saying what it is.
///
/// Executables are checked in a second step, ``checkingExecutables(_:daemonUID:)``, once the owner has looked each
/// program up in `PATH` and stat()ed it.
public struct PluginCatalog: Hashable, Sendable {
    /// One directory entry, as the owner read it.
    public struct Entry: Hashable, Sendable {
        /// The entry's name in its directory, e.g. `session.plugin`, as text (invalid UTF-8 repaired).
        public var fileName: String
        /// The entry's name as the directory holds it, which need not be UTF-8.
        public var fileNameBytes: [UInt8]
        /// The full path, for reports.
        public var path: String
        /// The file's text, or why it could not be read.
        public var contents: Contents
        /// Its owner and mode, from `stat()` (not `lstat()`: a link is trusted for what it leads to).
        public var facts: FileFacts
        /// Its text parsed already, by an owner that spreads the parsing of thousands of files over turns
        /// (``parsingText()``); nil to parse it when the catalog is made.
        public var parsed: Result<PluginFile, PluginFileError>?

        /// Creates an entry.
        public init(fileName: String, path: String, contents: Contents, facts: FileFacts) {
            self.init(fileNameBytes: Array(fileName.utf8), path: path, contents: contents, facts: facts)
        }

        /// Creates an entry from the name's bytes as the directory holds them.
        public init(fileNameBytes: [UInt8], path: String, contents: Contents, facts: FileFacts) {
            self.fileName = String(decoding: fileNameBytes, as: UTF8.self)
            self.fileNameBytes = fileNameBytes
            self.path = path
            self.contents = contents
            self.facts = facts
        }

        /// The entry with its text parsed now (see ``parsed``), when its name is a plugin name and it was read.
        public func parsingText() -> Entry {
            guard parsed == nil, case .text(let text) = contents,
                let resolved = PluginName.resolve(fileName: fileNameBytes), resolved.refusal == nil
            else { return self }
            var copy = self
            copy.parsed = Result { () throws(PluginFileError) in
                try PluginFile(name: resolved.name, path: path, text: text)
            }
            return copy
        }
    }

    /// A file's text, or the reason reading it failed.
    public enum Contents: Hashable, Sendable {
        /// The file's text, as read.
        case text(String)
        /// The read failed: the errno text, e.g. "Permission denied (errno 13)".
        case unreadable(String)
        /// The entry is no regular file: what it is, e.g. "a directory", "a FIFO", "a symbolic link to nothing".
        case notAFile(String)
    }

    /// A plugin file that does not load, with the reason.
    public struct Refusal: Hashable, Sendable {
        /// The plugin name from the file name (possibly itself the problem).
        public var name: String
        /// The file's path.
        public var path: String
        /// Why it is refused: "line 4: unknown key 'Foo'", "owned by uid 1001, not by 1000 or root".
        public var reason: String

        /// Creates a refusal.
        public init(name: String, path: String, reason: String) {
            self.name = name
            self.path = path
            self.reason = reason
        }
    }

    /// A mask: the name and the file that masks it.
    public struct Mask: Hashable, Sendable {
        /// The plugin name masked.
        public var name: String
        /// The file that masks it.
        public var path: String

        /// Creates a mask.
        public init(name: String, path: String) {
            self.name = name
            self.path = path
        }
    }

    /// What the owner found when it looked a plugin's program up and stat()ed it.
    public enum ExecutableLookup: Hashable, Sendable {
        /// The program is the file at `path`, with these facts.
        case found(path: String, facts: FileFacts)
        /// It is not there, or not executable: the reason, e.g. "'bridge' not found in PATH".
        case notFound(String)
    }

    /// The plugins that load, sorted by name.
    public private(set) var declarations: [PluginDeclaration] = []
    /// The files that do not, sorted by name.
    public private(set) var refused: [Refusal] = []
    /// The names masked, sorted by name.
    public private(set) var masked: [Mask] = []

    /// Decides the effective set from the listings of the user's directory and of each system directory.
    ///
    /// - Parameters:
    ///   - user: the entries of `$XDG_CONFIG_HOME/herald/plugins/`.
    ///   - system: the entries of each `$XDG_DATA_DIRS/herald/plugins/`, in the order of `XDG_DATA_DIRS`.
    ///   - daemonUID: the uid the daemon runs as.
    public init(user: [Entry], system: [[Entry]], daemonUID: UInt32) {
        var decided: Set<String> = []
        for directory in [user] + system {
            // Sorted, so the result does not depend on the order readdir() happened to return.
            for entry in directory.sorted(by: { $0.fileNameBytes.lexicographicallyPrecedes($1.fileNameBytes) }) {
                guard let resolved = PluginName.resolve(fileName: entry.fileNameBytes),
                    decided.insert(resolved.name).inserted
                else { continue }
                if let refusal = resolved.refusal {
                    refused.append(Refusal(name: resolved.name, path: entry.path, reason: refusal))
                } else {
                    decide(name: resolved.name, entry: entry, daemonUID: daemonUID)
                }
            }
        }
        declarations.sort { $0.name < $1.name }
        refused.sort { $0.name < $1.name }
        masked.sort { $0.name < $1.name }
    }

    private mutating func decide(name: String, entry: Entry, daemonUID: UInt32) {
        func refuse(_ reason: String) {
            refused.append(Refusal(name: name, path: entry.path, reason: reason))
        }
        if case .notAFile(let what) = entry.contents { return refuse("it is \(what), not a regular file") }
        if let problem = entry.facts.trustProblem(daemonUID: daemonUID) { return refuse(problem) }
        let text: String
        switch entry.contents {
        case .text(let contents): text = contents
        case .unreadable(let reason): return refuse("cannot read: \(reason)")
        case .notAFile: return
        }
        do {
            let file: PluginFile
            if let parsed = entry.parsed {
                file = try parsed.get()
            } else {
                file = try PluginFile(name: name, path: entry.path, text: text)
            }
            switch file {
            case .plugin(let declaration): declarations.append(declaration)
            case .mask: masked.append(Mask(name: name, path: entry.path))
            }
        } catch {
            refuse(error.description)
        }
    }

    /// The catalog with each declaration's program checked: a program found and trusted gets its path in
    /// ``PluginDeclaration/executable``; one not found, or not trusted by the rule files follow, moves its plugin to
    /// ``refused``.
    ///
    /// - Parameters:
    ///   - lookups: what the owner found for each plugin, by plugin name. A plugin missing here is refused, so a
    ///     forgotten lookup never runs an unchecked program.
    ///   - daemonUID: the uid the daemon runs as.
    public func checkingExecutables(_ lookups: [String: ExecutableLookup], daemonUID: UInt32) -> PluginCatalog {
        var checked = self
        checked.declarations = []
        for var declaration in declarations {
            func refuse(_ reason: String) {
                checked.refused.append(Refusal(name: declaration.name, path: declaration.path, reason: reason))
            }
            switch lookups[declaration.name] {
            case nil:
                refuse("executable '\(declaration.program)' was not checked")
            case .notFound(let reason):
                refuse("executable \(reason)")
            case .found(let path, let facts):
                if let problem = facts.trustProblem(daemonUID: daemonUID) {
                    refuse("executable \(path): \(problem)")
                } else {
                    declaration.executable = path
                    checked.declarations.append(declaration)
                }
            }
        }
        checked.refused.sort { $0.name < $1.name }
        return checked
    }
}
