import HeraldBroker
import HeraldPosix

/// Where heraldd's state log lives, and the compacted copy being written beside it (Daemon+State.swift).
///
/// A class: the daemon swaps the log for its compacted copy when that is whole.
final class StateStore {
    /// The log's file, or a name for messages when it is a memfd.
    let path: String
    var log: LogFile
    /// The compacted copy being written, a step a turn, while the log keeps growing.
    var compaction: Compaction?
    /// Whether the last write failed: logged once per episode.
    var failing = false

    /// A compacted log in the making: a header, every will and the plugins record at once, then the retained
    /// values a bounded number a step, each read as it is then (so records appended to both logs meanwhile stay
    /// right: a value written by a step is the newest, and one changed after is appended after it).
    final class Compaction {
        let path: String
        let log: LogFile
        var names: [String]
        var next = 0

        init(path: String, log: LogFile, names: [String]) {
            self.path = path
            self.log = log
            self.names = names
        }
    }

    init(path: String, log: LogFile) {
        self.path = path
        self.log = log
    }

    /// How many retained values one compaction step writes: a few hundred microseconds of the loop.
    static let valuesPerStep = 512
    /// The most a state log may be read at start: past every bound's default with room.
    static let readLimit = 1 << 30
}
