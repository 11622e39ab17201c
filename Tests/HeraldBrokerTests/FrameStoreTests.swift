import HeraldWire
import Testing

@testable import HeraldBroker

/// The queue's own buffer, event by event: frames appended at the tail, packed into a new buffer by the 3/4 rule
/// when one does not fit, shrunk, capped while shed, and shared by copies until one of them writes.
struct FrameStoreTests {
    /// `count` records of `size` bytes each, back to back from offset 0 in `store`, each byte its record's index.
    static func fill(_ store: inout FrameStore, records count: Int, size: Int) -> Deque<FrameRing.Record> {
        var records = Deque<FrameRing.Record>()
        for index in 0..<count {
            let start = store.reserveInPlace(size)!
            (store.base + start).initializeMemory(as: UInt8.self, repeating: UInt8(index), count: size)
            records.append(FrameRing.Record(start: start, size: size, sequence: UInt64(index + 1)))
        }
        return records
    }

    static func bytes(_ store: FrameStore, _ record: FrameRing.Record) -> [UInt8] {
        Array(UnsafeRawBufferPointer(start: store.base + record.start, count: record.size))
    }

    @Test func anEmptyStoreHasNoBufferUntilItRelocates() {
        var store = FrameStore(accounting: nil)
        #expect(store.capacity == 0)
        #expect(store.reserveInPlace(10) == nil)
        var records = Deque<FrameRing.Record>()
        store.relocate(&records, queuedBytes: 0, adding: 10, shrinking: false, arena: nil)
        #expect(store.capacity == FrameStore.minimumCapacity)
        #expect(store.reserveInPlace(10) == 0)
        #expect(store.reserveInPlace(10) == 10)
    }

    @Test func relocationPacksTheFramesLeftAndSkipsTheHoles() {
        let accounting = OutputAccounting()
        var store = FrameStore(accounting: accounting)
        var empty = Deque<FrameRing.Record>()
        store.relocate(&empty, queuedBytes: 0, adding: 0, shrinking: false, arena: nil)
        var records = Self.fill(&store, records: 5, size: 100)  // 500 of 512 bytes
        #expect(store.reserveInPlace(100) == nil, "full")
        // Records 1 and 3 were dropped: their bytes are holes.
        records.remove(at: 3)
        records.remove(at: 1)
        store.relocate(&records, queuedBytes: 300, adding: 100, shrinking: false, arena: nil)
        // 400 of 512 is more than three quarters: the buffer doubles.
        #expect(store.capacity == 1_024)
        #expect(accounting.bytes == 1_024, "the old buffer is freed, the new one counted")
        #expect((0..<records.count).map { records[$0].start } == [0, 100, 200])
        #expect(
            (0..<records.count).map { Self.bytes(store, records[$0]).allSatisfy { [0, 2, 4].contains($0) } } == [
                true, true, true,
            ]
        )
        #expect(Self.bytes(store, records[1]).first == 2)
        #expect(store.reserveInPlace(100) == 300)
    }

    @Test func relocationKeepsTheCapacityWhenAQuarterStaysFree() {
        var store = FrameStore(accounting: nil)
        var records = Deque<FrameRing.Record>()
        store.relocate(&records, queuedBytes: 0, adding: 0, shrinking: false, arena: nil)
        records = Self.fill(&store, records: 5, size: 100)
        records.removeFirst()
        records.removeFirst()
        store.relocate(&records, queuedBytes: 300, adding: 50, shrinking: false, arena: nil)
        #expect(store.capacity == 512, "350 of 512 is under three quarters")
    }

    @Test func shrinkingAndTheCeilingBoundTheNewBuffer() {
        var store = FrameStore(accounting: nil)
        var records = Deque<FrameRing.Record>()
        store.relocate(&records, queuedBytes: 0, adding: 4_000, shrinking: false, arena: nil)
        #expect(store.capacity == 8_192)
        records = Self.fill(&store, records: 40, size: 100)
        store.relocate(&records, queuedBytes: 4_000, adding: 0, shrinking: true, arena: nil)
        #expect(store.capacity == 4_000, "just enough")
        store.ceiling = 4_500
        store.relocate(&records, queuedBytes: 4_000, adding: 200, shrinking: false, arena: nil)
        #expect(store.capacity == 4_500, "the doubling is capped while shed")
        store.ceiling = 1_000
        store.relocate(&records, queuedBytes: 4_000, adding: 200, shrinking: false, arena: nil)
        #expect(store.capacity == 4_200, "never less than the frames need")
    }

    @Test func aCopyWritesIntoABufferOfItsOwn() {
        var store = FrameStore(accounting: nil)
        var records = Deque<FrameRing.Record>()
        store.relocate(&records, queuedBytes: 0, adding: 0, shrinking: false, arena: nil)
        records = Self.fill(&store, records: 1, size: 10)
        var copy = store
        #expect(copy.reserveInPlace(10) == nil, "shared: the copy must relocate first")
        let originalHasRoom = store.hasRoomInPlace(for: 10)
        #expect(!originalHasRoom, "shared for the original too, while the copy holds it")
        var copyRecords = records
        copy.relocate(&copyRecords, queuedBytes: 10, adding: 10, shrinking: false, arena: nil)
        #expect(copy.buffer !== store.buffer)
        let originalHasRoomAlone = store.hasRoomInPlace(for: 10)
        #expect(originalHasRoomAlone)
    }

    @Test func relocatingRecordsThatDisagreeWithQueuedBytesTraps() async {
        await #expect(processExitsWith: .failure) {
            var store = FrameStore(accounting: nil)
            var records = Deque<FrameRing.Record>()
            store.relocate(&records, queuedBytes: 0, adding: 0, shrinking: false, arena: nil)
            records = FrameStoreTests.fill(&store, records: 2, size: 10)
            store.relocate(&records, queuedBytes: 30, adding: 0, shrinking: false, arena: nil)
        }
    }
}
