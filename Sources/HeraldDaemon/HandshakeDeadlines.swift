/// When each connection that has not completed `HELLO` is due to be closed (`--hello-timeout-ms`), in the order the
/// connections were accepted.
///
/// The timeout is the same for every connection and accepts come in time order, so the deadlines are already sorted:
/// a FIFO is the whole timer structure. Adding is O(1), finding the next deadline is O(1), and each entry is taken
/// once, so the loop never scans the connections. An entry outlives its connection's handshake (it is not removed
/// when `HELLO` arrives or the connection closes): when it falls due, the daemon checks that the connection is the
/// same one (``Channel/serial``) and still waiting, so entries are at most the connections accepted in one timeout.
struct HandshakeDeadlines {
    struct Entry {
        var descriptor: Int32
        var serial: UInt64
        /// Monotonic nanoseconds.
        var deadline: UInt64
    }

    private var entries: [Entry] = []
    /// Entries before this index were taken; they are dropped in bulk once they are half the array.
    private var head = 0

    var isEmpty: Bool { head == entries.count }

    /// The earliest deadline pending, if any.
    var nextDeadline: UInt64? { isEmpty ? nil : entries[head].deadline }

    /// Adds the deadline of a connection just accepted: it must not be earlier than any added before.
    mutating func append(_ entry: Entry) {
        precondition(
            isEmpty || entries[entries.count - 1].deadline <= entry.deadline,
            "handshake deadlines out of order"
        )
        entries.append(entry)
    }

    /// Takes the earliest entry if it is due at `now`.
    mutating func takeDue(now: UInt64) -> Entry? {
        guard head < entries.count, entries[head].deadline <= now else { return nil }
        let entry = entries[head]
        head += 1
        if head == entries.count {
            entries.removeAll(keepingCapacity: entries.capacity <= 4096)
            head = 0
        } else if head >= 1024 && head * 2 >= entries.count {
            entries.removeFirst(head)
            head = 0
        }
        return entry
    }
}
