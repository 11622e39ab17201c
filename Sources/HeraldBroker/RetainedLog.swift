/// The retained values' names in the order of their posts, so a replay can walk them oldest first, a few at a
/// time, as its subscriber drains, without copying the set or sorting it per `SUBSCRIBE`.
///
/// Each value stored appends its post's sequence number and name; an entry whose name has since been given a
/// newer value, or cleared, is stale, and the reader skips it (the broker's `retained` says which value is
/// current). Entries stay in increasing sequence order, so a replay keeps its place as a sequence number and
/// finds it again by binary search, even after stale entries are compacted away. Compaction runs once stale
/// entries outnumber current ones, so the log holds at most about twice the retained set.
struct RetainedLog {
    struct Entry {
        let sequence: UInt64
        let name: String
    }

    private(set) var entries: [Entry] = []

    var count: Int { entries.count }

    subscript(index: Int) -> Entry { entries[index] }

    /// Records that `name` holds the value posted with `sequence`, the newest sequence number so far.
    mutating func append(sequence: UInt64, name: String) {
        precondition(entries.last.map { $0.sequence < sequence } ?? true, "the retained log is in post order")
        entries.append(Entry(sequence: sequence, name: name))
    }

    /// Drops the stale entries once they outnumber the current ones.
    ///
    /// - Parameter current: How many entries are current (the retained set's size).
    /// - Parameter isCurrent: Whether an entry still names its value.
    mutating func compact(current: Int, isCurrent: (Entry) -> Bool) {
        guard entries.count > 2 * current + 64 else { return }
        entries.removeAll { !isCurrent($0) }
    }

    /// The index of the first entry whose sequence number is `sequence` or more, or `count`.
    func firstIndex(atOrAfter sequence: UInt64) -> Int {
        var low = 0
        var high = entries.count
        while low < high {
            let middle = (low + high) / 2
            if entries[middle].sequence < sequence {
                low = middle + 1
            } else {
                high = middle
            }
        }
        return low
    }
}
