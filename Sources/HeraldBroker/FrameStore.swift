/// The memory a queue copies its frames into: one buffer, frames appended back to back at `tail`, with holes
/// where frames were dropped since it was last packed.
///
/// A dropped frame's bytes stay where they are: `FrameRing.pendingChunks` skips them, so a drop costs no copy.
/// When a frame does not fit at the tail, `relocate` packs the frames still queued into a fresh buffer: the same
/// capacity when at most three quarters of it will then be in use, else doubled until that holds. A queue's buffer
/// therefore stays under about three times its bound however long a subscriber stays stopped, and each byte is
/// copied a bounded number of times (amortized, at least a quarter of the buffer is new frames between two
/// relocations).
///
/// The buffer is a class so that a copy of a queue shares it until one of them writes (`isKnownUniquelyReferenced`),
/// like the standard library's collections.
struct FrameStore {
    /// The memory one queue's frames are copied into, freed when no queue holds it any more.
    final class Buffer {
        let base: UnsafeMutableRawPointer
        let capacity: Int
        private let accounting: OutputAccounting?

        init(capacity: Int, accounting: OutputAccounting?) {
            base = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16)
            self.capacity = capacity
            self.accounting = accounting
            accounting?.add(capacity)
        }

        deinit {
            base.deallocate()
            accounting?.add(-capacity)
        }
    }

    /// The smallest buffer allocated.
    static let minimumCapacity = 512

    private(set) var buffer: Buffer?
    /// Where the next frame's bytes go in `buffer`.
    private(set) var tail = 0
    /// Where the buffer's capacity is counted, for the daemon's global bound.
    let accounting: OutputAccounting?
    /// From the time the queue was shed until it drains, the most the buffer may grow to (see
    /// `OutboundQueue.shed(toBytes:)`).
    var ceiling: Int?
    /// Bytes copied by `relocate` so far: the cost of packing, counted for tests (at most three times the bytes
    /// appended, as each relocation leaves a quarter of the buffer free for new frames).
    private(set) var relocatedBytes = 0

    init(accounting: OutputAccounting?) {
        self.accounting = accounting
    }

    /// The bytes allocated: what `OutputAccounting` counts for this store.
    var capacity: Int { buffer?.capacity ?? 0 }

    /// Where the buffer starts. Only for a store that has one: a record that is not in the arena has its bytes here.
    var base: UnsafeMutableRawPointer { buffer!.base }

    /// Takes `size` bytes at the tail when the buffer is this store's alone and has room for them.
    ///
    /// - Returns: Where they start, or nil when the caller must `relocate` first.
    mutating func reserveInPlace(_ size: Int) -> Int? {
        // Uniqueness first: binding `buffer` to a local would hold a second reference.
        guard isKnownUniquelyReferenced(&buffer), tail + size <= buffer!.capacity else { return nil }
        defer { tail += size }
        return tail
    }

    /// Whether `size` more bytes fit at the tail of a buffer this store holds alone.
    mutating func hasRoomInPlace(for size: Int) -> Bool {
        isKnownUniquelyReferenced(&buffer) && tail + size <= buffer!.capacity
    }

    /// Frees the buffer: no frame is left in it.
    mutating func release() {
        buffer = nil
        tail = 0
    }

    /// Copies the bytes of `records` (in the arena or in this buffer, as each says) in order and back to back into
    /// a new buffer with room for `size` more bytes, and points the records at their new place. The new buffer has
    /// the same capacity when at most three quarters of it will then be in use, else twice as much as needed; with
    /// `shrinking`, just enough; and never more than `ceiling`, unless the frames need it. Also how a copied queue
    /// stops sharing its buffer.
    ///
    /// - Parameter queuedBytes: the records' sizes added up, which the caller keeps and this checks.
    mutating func relocate(
        _ records: inout Deque<FrameRing.Record>,
        queuedBytes: Int,
        adding size: Int,
        shrinking: Bool,
        arena: FrameArena?
    ) {
        let needed = queuedBytes + size
        var capacity = Swift.max(Self.minimumCapacity, shrinking ? needed : buffer?.capacity ?? 0)
        while !shrinking && needed * 4 > capacity * 3 { capacity *= 2 }
        if let ceiling {
            capacity = Swift.max(needed, Swift.min(capacity, ceiling))
        }
        let fresh = Buffer(capacity: capacity, accounting: accounting)
        var offset = 0
        for index in 0..<records.count {
            let record = records[index]
            let source = (record.inArena ? arena!.base : buffer!.base) + record.start
            precondition(offset + record.size <= queuedBytes, "the queue's records hold more than its queuedBytes")
            (fresh.base + offset).copyMemory(from: source, byteCount: record.size)
            records[index].start = offset
            records[index].inArena = false
            offset += record.size
        }
        precondition(offset == queuedBytes, "the queue's records hold \(offset) bytes, its queuedBytes \(queuedBytes)")
        buffer = fresh
        tail = offset
        relocatedBytes += offset
    }

    /// Copies `record`'s bytes from the arena to the tail, which has room for them (`hasRoomInPlace`), and points
    /// the record there.
    mutating func settle(_ record: inout FrameRing.Record, from arena: FrameArena) {
        assert(record.inArena && tail + record.size <= buffer!.capacity, "settled without room")
        (buffer!.base + tail).copyMemory(from: arena.base + record.start, byteCount: record.size)
        record.start = tail
        record.inArena = false
        tail += record.size
    }
}
