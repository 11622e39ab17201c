import HeraldWire

/// One queue's frames, in the order they go out: a small record per frame (or per run of live frames that lie back
/// to back in the broker's arena), their bytes in the queue's `FrameStore` or in the `FrameArena`, and the byte
/// counts the overflow policies read.
///
/// The ring knows nothing of policies or notices: it appends, removes, offers the bytes to write and forgets what
/// was written. `OutboundQueue` decides what goes in and what is dropped. Nothing is reference-counted per frame.
///
/// Its invariants, which the preconditions below and `OutboundQueueTests` check:
/// - `queuedBytes` is the sum of the records' sizes, `controlBytes` that of the control frames (the records with
///   sequence 0 and a size), `arenaBytes` that of the records still in the arena.
/// - `headOffset`, the bytes of the first record already written, is less than its size; a record partly written
///   is one frame, never a run, and is never dropped or moved from the front.
/// - A run is live frames only, each whole, back to back in the arena; its `sequence` is its first frame's.
/// - A tombstone (a frame coalesced away from the middle) has size 0 and count 0; it holds no bytes.
@usableFromInline
struct FrameRing {
    /// Where one frame's bytes are, or a run's, and what the policies need to know of it.
    @usableFromInline
    struct Record: BitwiseCopyable {
        /// Where the frame's bytes start in the store (or the arena).
        var start: Int
        /// The frames' size, headers included.
        var size: Int
        /// The post's sequence number for a live `NOTIFY` (the first one's, for a run); 0 for a control frame.
        var sequence: UInt64
        /// How many frames lie back to back here: 1, or more for a run of live frames from the arena.
        var count: Int = 1
        /// Whether this is the `DROPPED` notice that may still absorb later drops (its counts are the
        /// `DropLedger`'s open notice).
        var isOpenNotice: Bool = false
        /// Whether the bytes are in the broker's arena rather than in the store.
        var inArena: Bool = false

        /// Whether this is a live frame (or run), which the policies may drop.
        var isDroppable: Bool { sequence != 0 }
        /// Whether this is what a coalesced frame leaves behind in the middle of the queue.
        var isTombstone: Bool { size == 0 }
    }

    @usableFromInline var records = Deque<Record>()
    /// The queue's own copies of frames.
    var store: FrameStore
    /// The broker's arena, where a turn's live posts are encoded once for every queue.
    let arena: FrameArena?
    /// Bytes of the first record already written.
    var headOffset = 0
    /// Bytes of every record, whole, including the part of the first already written.
    @usableFromInline var queuedBytes = 0
    /// Bytes of queued control frames, which are never dropped.
    @usableFromInline var controlBytes = 0
    /// Bytes of queued frames that are still in the arena.
    var arenaBytes = 0

    init(accounting: OutputAccounting?, arena: FrameArena?) {
        store = FrameStore(accounting: accounting)
        self.arena = arena
    }

    /// The index of the first record not begun: the frame in flight, if any, is at 0.
    var firstUnbegun: Int { headOffset > 0 ? 1 : 0 }

    // MARK: Appending

    /// Appends a record for the live frame of `size` bytes at `offset` in the arena.
    mutating func appendArena(offset: Int, size: Int, sequence: UInt64) {
        assert(arena != nil && offset >= 0 && offset + size <= arena!.capacity, "a frame outside the arena")
        records.append(Record(start: offset, size: size, sequence: sequence, inArena: true))
        queuedBytes += size
        arenaBytes += size
    }

    /// Appends a copy of the live frame `frame`.
    mutating func appendCopy(_ frame: UnsafeRawBufferPointer, sequence: UInt64) {
        let start = reserve(frame.count)
        (store.base + start).copyMemory(from: frame.baseAddress!, byteCount: frame.count)
        records.append(Record(start: start, size: frame.count, sequence: sequence))
        queuedBytes += frame.count
    }

    /// Encodes the control frame `frame` into the store and appends its record.
    mutating func appendControl(_ frame: Frame) {
        records.append(encodeControl(frame, isOpenNotice: false))
    }

    /// Encodes the control frame `frame` into the store and inserts its record at `index`, which must not be
    /// ahead of the frame in flight.
    mutating func insertControl(_ frame: Frame, at index: Int, isOpenNotice: Bool) {
        precondition(index >= firstUnbegun, "a frame placed ahead of the frame in flight")
        records.insert(encodeControl(frame, isOpenNotice: isOpenNotice), at: index)
    }

    /// Encodes the control frame `frame` at the end of the store and counts it; the caller places its record.
    private mutating func encodeControl(_ frame: Frame, isOpenNotice: Bool) -> Record {
        let size = frame.encodedSize
        let start = reserve(size)
        frame.encode(to: UnsafeMutableRawBufferPointer(start: store.base + start, count: size))
        queuedBytes += size
        controlBytes += size
        return Record(start: start, size: size, sequence: 0, isOpenNotice: isOpenNotice)
    }

    /// Appends the record of another ring's frame (or run), copying its bytes into this store.
    mutating func appendCopy(of record: Record, from other: FrameRing) {
        let start = reserve(record.size)
        (store.base + start).copyMemory(from: other.start(of: record), byteCount: record.size)
        records.append(Record(start: start, size: record.size, sequence: record.sequence, count: record.count))
        queuedBytes += record.size
        if !record.isDroppable { controlBytes += record.size }
    }

    // MARK: Removing

    /// Removes the record at `index`, not begun; its bytes stay behind as a hole until the store is next packed.
    @discardableResult
    mutating func remove(at index: Int) -> Record {
        precondition(index >= firstUnbegun, "the frame in flight removed")
        let record = records.remove(at: index)
        forgetBytes(of: record)
        return record
    }

    /// Removes the first record, all of it written.
    @discardableResult
    mutating func removeFirstWritten() -> Record {
        let record = records.removeFirst()
        headOffset = 0
        forgetBytes(of: record)
        return record
    }

    /// Takes a record that left the queue out of the byte counts.
    private mutating func forgetBytes(of record: Record) {
        queuedBytes -= record.size
        if record.inArena { arenaBytes -= record.size }
        if !record.isDroppable { controlBytes -= record.size }
        assert(queuedBytes >= 0 && arenaBytes >= 0 && controlBytes >= 0, "byte counts below zero")
    }

    /// Removes every record and frees the store.
    mutating func removeAll() {
        records.removeAll()
        headOffset = 0
        queuedBytes = 0
        controlBytes = 0
        arenaBytes = 0
        store.release()
    }

    /// Keeps only the frame in flight (written in part), which must exist.
    mutating func removeAllButFrameInFlight() {
        precondition(headOffset > 0, "no frame in flight")
        var inFlight = records[0]
        inFlight.isOpenNotice = false
        records.removeAll()
        records.append(inFlight)
        queuedBytes = inFlight.size
        controlBytes = inFlight.isDroppable ? 0 : inFlight.size
        arenaBytes = inFlight.inArena ? inFlight.size : 0
    }

    // MARK: The store and the arena

    /// Makes room for `size` bytes at the end of the store and returns where they start.
    mutating func reserve(_ size: Int) -> Int {
        if let start = store.reserveInPlace(size) { return start }
        relocate(adding: size)
        return store.reserveInPlace(size)!
    }

    /// Packs every record's bytes into a new buffer with room for `size` more (see `FrameStore.relocate`): the
    /// arena's frames are copied out too.
    mutating func relocate(adding size: Int, shrinking: Bool = false) {
        store.relocate(&records, queuedBytes: queuedBytes, adding: size, shrinking: shrinking, arena: arena)
        arenaBytes = 0
    }

    /// Copies the records still in the arena into the store, so the arena can be reused.
    mutating func settleArena() {
        guard arenaBytes > 0 else { return }
        guard store.hasRoomInPlace(for: arenaBytes) else { return relocate(adding: 0) }
        var settled = 0
        for index in 0..<records.count where records[index].inArena {
            settled += records[index].size
            store.settle(&records[index], from: arena!)
        }
        precondition(settled == arenaBytes, "records in the arena hold \(settled) bytes, arenaBytes \(arenaBytes)")
        arenaBytes = 0
    }

    // MARK: Reading

    /// Where a record's bytes are.
    func start(of record: Record) -> UnsafeMutableRawPointer {
        (record.inArena ? arena!.base : store.base) + record.start
    }

    /// The bytes of a record.
    func bytes(of record: Record) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: start(of: record), count: record.size)
    }

    /// Whether a record is a `WELCOME`.
    func isWelcome(_ record: Record) -> Bool {
        !record.isDroppable && !record.isTombstone
            && start(of: record).load(fromByteOffset: FrameLayout.type, as: UInt8.self) == FrameType.welcome.rawValue
    }

    /// Calls `body` with the bytes to write next, in order: ranges of the store and the arena, each as long as the
    /// frames in it lie back to back, at most `maxChunks` of them and no more once `maxBytes` are offered.
    ///
    /// The memory stays valid until the next mutation of the ring.
    func pendingChunks(maxChunks: Int, maxBytes: Int, _ body: (UnsafeRawBufferPointer) -> Void) {
        guard maxChunks > 0, !records.isEmpty else { return }
        let base = store.buffer?.base
        let arenaBase = arena?.base
        var offered = 0
        var chunks = 0
        let first = records[0]
        var runStart = (first.inArena ? arenaBase! : base!) + first.start + headOffset
        var runEnd = (first.inArena ? arenaBase! : base!) + first.start + first.size
        var index = 1
        let count = records.count
        while index < count && runEnd - runStart + offered < maxBytes {
            let record = records[index]
            if record.size == 0 {  // a tombstone of a coalesced frame
                index += 1
                continue
            }
            let recordStart = (record.inArena ? arenaBase! : base!) + record.start
            if recordStart != runEnd {
                body(UnsafeRawBufferPointer(start: runStart, count: runEnd - runStart))
                offered += runEnd - runStart
                chunks += 1
                if chunks == maxChunks || offered >= maxBytes { return }
                runStart = recordStart
            }
            runEnd = recordStart + record.size
            index += 1
        }
        body(UnsafeRawBufferPointer(start: runStart, count: runEnd - runStart))
    }

    /// The size of the frame at `pointer`, header included.
    static func frameSize(at pointer: UnsafeRawPointer) -> Int {
        FrameLayout.lengthSize + Int(UInt32(littleEndian: pointer.loadUnaligned(as: UInt32.self)))
    }
}
