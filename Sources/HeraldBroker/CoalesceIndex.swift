/// With the `coalesce` policy: where each name's newest queued live frame is, and which queued frames a newer
/// one of the same name supersedes, oldest first. `OutboundQueue` keeps it beside its records.
///
/// Before, making room scanned the whole queue and made a `String` of every queued frame's name, so one stuck
/// subscriber with a full queue cost every post to it O(queue) work (32 posts/s instead of 52,190). Here a
/// frame is found by its position, remembered when it was queued, and names are keyed by a hash of their bytes:
/// queuing a frame costs one hash of its name and one dictionary access, and dropping the oldest superseded frame
/// one pop of a heap.
///
/// A position is an ordinal: the record's index plus `Deque.firstOrdinal`, which stays put while records leave the
/// front or are prepended. Dropping a superseded frame from the middle leaves a tombstone record in its place, so
/// the ordinals behind it stay put too (the queue purges tombstones from the front and compacts them away when
/// they are many). Every remembered position is checked against the record's sequence number before use, so a
/// stale one (the frame was written or dropped since) is skipped, never misread.
///
/// Names are keyed by a 64-bit hash of their bytes, seeded per process, so no client can aim for a collision;
/// and a frame is marked superseded only after its name's bytes are compared with the newer frame's, so a
/// collision could only leave a frame uncoalesced, never drop a frame that was not superseded.
struct CoalesceIndex {
    /// Where one queued live frame is.
    struct Slot: BitwiseCopyable {
        var sequence: UInt64
        var ordinal: Int
    }

    /// The newest queued live frame of each name, by the name's hash.
    private var newest: [Int: Slot] = [:]
    /// Frames a newer queued frame of the same name supersedes: a binary min-heap by sequence number. A frame
    /// written or dropped since it was pushed stays until it is popped (and then skipped) or the index is rebuilt.
    private var superseded: [Slot] = []
    /// Tombstone records in the queue: frames dropped as superseded from the middle.
    var tombstones = 0
    /// Queued frames whose position was checked: the work of coalescing, counted for tests.
    var examined = 0
    /// How many times the queue compacted its tombstones and rebuilt this index, for tests.
    var compactions = 0

    /// The key of the name whose UTF-8 bytes are `name`.
    static func key(ofName name: UnsafeRawBufferPointer) -> Int {
        var hasher = Hasher()
        hasher.combine(bytes: name)
        return hasher.finalize()
    }

    /// Forgets every frame (not the tombstone count, which counts records still in the queue).
    mutating func removeAll() {
        newest = [:]
        superseded = []
    }

    /// Where the newest queued frame of the name `key` is, if one is remembered.
    func newest(for key: Int) -> Slot? {
        newest[key]
    }

    /// Remembers `slot` as the newest queued frame of the name `key`.
    mutating func setNewest(_ slot: Slot, for key: Int) {
        newest[key] = slot
    }

    /// A frame left the queue (written or dropped): if it was its name's newest, its name has none now.
    mutating func forget(sequence: UInt64, key: Int) {
        if let slot = newest[key], slot.sequence == sequence { newest[key] = nil }
    }

    /// How many frames `popOldestSuperseded()` may still return, some perhaps gone since.
    var supersededCount: Int { superseded.count }

    /// Records that a newer frame of its name supersedes the frame at `slot`.
    mutating func pushSuperseded(_ slot: Slot) {
        superseded.append(slot)
        var child = superseded.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard superseded[child].sequence < superseded[parent].sequence else { break }
            superseded.swapAt(child, parent)
            child = parent
        }
    }

    /// Takes out the superseded frame with the lowest sequence number.
    mutating func popOldestSuperseded() -> Slot? {
        guard let last = superseded.popLast() else { return nil }
        guard !superseded.isEmpty else { return last }
        let oldest = superseded[0]
        superseded[0] = last
        var parent = 0
        while true {
            let left = 2 * parent + 1
            guard left < superseded.count else { break }
            var child = left
            if left + 1 < superseded.count && superseded[left + 1].sequence < superseded[left].sequence {
                child = left + 1
            }
            guard superseded[child].sequence < superseded[parent].sequence else { break }
            superseded.swapAt(child, parent)
            parent = child
        }
        return oldest
    }
}
