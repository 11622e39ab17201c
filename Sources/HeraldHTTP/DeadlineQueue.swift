/// Connections in the order their deadlines fall, for one timeout that is the same for all of them.
///
/// Every deadline pushed is "now plus the same duration", so pushing in time order keeps the queue sorted: the
/// earliest deadline is at the front, and finding expired connections, or the one that has waited longest (the
/// first to close under pressure), costs O(1) instead of a scan of every connection per turn of the loop.
///
/// A connection whose deadline changes is pushed again; its old entry is left in place and skipped when it reaches
/// the front (the owner's `isCurrent` says which entries still hold). Stale entries are compacted away once they
/// outnumber the live ones, so memory stays proportional to the connections.
struct DeadlineQueue {
    struct Entry: Equatable {
        var deadline: UInt64
        var id: UInt64
    }

    private var entries: [Entry] = []
    /// Where the front is: entries before it have been taken.
    private var head = 0

    /// The entries held, stale ones included.
    var count: Int {
        entries.count - head
    }

    /// Adds `id` with `deadline`, which must not be earlier than any deadline pushed before (the monotonic clock
    /// plus this queue's fixed duration).
    mutating func push(id: UInt64, deadline: UInt64) {
        entries.append(Entry(deadline: deadline, id: id))
    }

    /// The first entry that is still current, after dropping the stale ones in front of it; nil when none is.
    mutating func front(isCurrent: (Entry) -> Bool) -> Entry? {
        while head < entries.count {
            if isCurrent(entries[head]) {
                return entries[head]
            }
            head += 1
        }
        entries.removeAll(keepingCapacity: entries.capacity <= 4096)
        head = 0
        return nil
    }

    /// Removes the front entry (the one ``front(isCurrent:)`` returned).
    mutating func removeFront() {
        precondition(head < entries.count, "removeFront on an empty DeadlineQueue")
        head += 1
        if head >= 1024 && head * 2 >= entries.count {
            entries.removeFirst(head)
            head = 0
        }
    }

    /// Drops stale entries when the queue holds more than twice `live` plus a little: O(count), amortised over the
    /// pushes that made them.
    mutating func compactIfSparse(live: Int, isCurrent: (Entry) -> Bool) {
        guard count > 2 * live + 64 else {
            return
        }
        entries = entries[head...].filter(isCurrent)
        head = 0
    }
}
