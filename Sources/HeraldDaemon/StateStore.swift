import HeraldBroker
import HeraldPosix

#if canImport(Glibc)
import Glibc
#endif

/// Where heraldd's state log lives, and the compacted copy being written beside it (Daemon+State.swift).
///
/// Under systemd with a descriptor store (`FileDescriptorStoreMax=`, which systemd 254 and later announce as
/// `$FDSTORE`) the log is a memfd kept in the store as `herald-state-N`: a compacted copy is stored as N+1 before
/// N is removed, so the store always holds a whole log. Otherwise it is the file `--state-file`, and a compacted
/// copy is written beside it and renamed over it.
///
/// A class: the daemon swaps the log for its compacted copy when that is whole.
final class StateStore {
    enum Place {
        case file(path: String)
        /// In systemd's descriptor store, as `herald-state-generation`.
        case store(SystemdNotifier, generation: Int)
    }

    var place: Place
    var log: LogFile
    /// The compacted copy being written, a step a turn, while the log keeps growing.
    var compaction: Compaction?
    /// Whether the last write failed: logged once per episode.
    var failing = false
    /// Whether a log went back from its mapping to `pwrite`s: logged once.
    var mappingFailed = false
    /// Whether a log's file was cut short by another process (``LogFile/cutShort``): what it held before may be
    /// gone, so the next compaction begins at once and writes the whole state again.
    var needsRewrite = false

    /// A compacted log in the making: a header, every will and the plugins record at once, then the retained
    /// values a bounded number a step, each read as it is then (so records appended to both logs meanwhile stay
    /// right: a value written by a step is the newest, and one changed after is appended after it).
    final class Compaction {
        let log: LogFile
        var names: [String]
        var next = 0

        init(log: LogFile, names: [String]) {
            self.log = log
            self.names = names
        }
    }

    init(place: Place, log: LogFile) {
        self.place = place
        self.log = log
    }

    /// The prefix of the names the log is stored under in systemd's descriptor store.
    static let storedName = "herald-state"
    /// How many retained values one compaction step writes: a few hundred microseconds of the loop.
    static let valuesPerStep = 512
    /// The most a state log may be read at start: past every bound's default with room.
    static let readLimit = 1 << 30

    /// For log lines.
    var description: String {
        switch place {
        case .file(let path): path
        case .store(_, let generation): "the memfd \(Self.storedName)-\(generation) in systemd's descriptor store"
        }
    }

    /// The notifier when systemd keeps descriptors for heraldd: `$NOTIFY_SOCKET` and a positive `$FDSTORE`.
    static func descriptorStore() -> SystemdNotifier? {
        guard let notifier = SystemdNotifier.fromEnvironment(), let value = getenv("FDSTORE"),
            let count = Int(String(cString: value)), count > 0
        else { return nil }
        return notifier
    }

    /// The generation in a stored log's name, `herald-state-N`.
    static func generation(of name: String) -> Int? {
        guard name.hasPrefix(storedName + "-") else { return nil }
        return Int(name.dropFirst(storedName.count + 1))
    }

    /// A new, empty log for a compacted copy: a memfd, or `PATH.new`.
    func makeCopy() throws(SystemError) -> LogFile {
        try Self.makeLog(for: place, growthLimit: log.growthLimit)
    }

    /// A new, empty log for `place`: a memfd, or `PATH.new`, appended to through a shared mapping (a copy a turn,
    /// no syscall), its reservation growing to at most `growthLimit` bytes.
    static func makeLog(for place: Place, growthLimit: Int) throws(SystemError) -> LogFile {
        let log: LogFile
        switch place {
        case .file(let path):
            FileSystem.remove(path + ".new")
            log = try LogFile.open(path: path + ".new")
        case .store:
            log = try LogFile.memory(name: Self.storedName)
        }
        log.mapAppends(terminator: StateLog.end)
        log.growthLimit = growthLimit
        return log
    }

    /// Makes the whole copy `copy` the log: renamed over the file, or stored as the next generation before the
    /// older one is removed from the store.
    func install(_ copy: LogFile) throws(SystemError) {
        switch place {
        case .file(let path):
            try LogFile.rename(path + ".new", to: path)
        case .store(let notifier, let generation):
            try notifier.store(copy.descriptor.rawValue, name: "\(Self.storedName)-\(generation + 1)")
            if generation > 0 { try? notifier.removeStored(name: "\(Self.storedName)-\(generation)") }
            place = .store(notifier, generation: generation + 1)
        }
        log = copy
    }
}
