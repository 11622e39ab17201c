import HeraldWire
import Testing

@testable import HeraldBroker

/// `coalesce` through its index: the same frames go as with a scan of the queue, and the work per post stays
/// bounded however full the queue is and whatever names are posted.
struct CoalesceIndexTests {
    /// wire.md's `COALESCE`, written out plainly over a list: what the queue must do, frame by frame.
    struct Model {
        enum Item: Equatable {
            case live(sequence: UInt64, name: String, size: Int)
            case notice
        }

        let limit: Int
        var items: [Item] = []
        var owed = 0
        static let noticeSize = Frame.dropped(Frame.Dropped(count: 1, firstSequence: 1, lastSequence: 1)).encodedSize

        var queuedBytes: Int {
            items.reduce(0) { total, item in
                switch item {
                case .live(_, _, let size): total + size
                case .notice: total + Self.noticeSize
                }
            }
        }

        mutating func offer(_ sequence: UInt64, name: String, size: Int) {
            func isSuperseded(_ index: Int) -> Bool {
                guard case .live(_, let own, _) = items[index] else { return false }
                return own == name
                    || items[(index + 1)...].contains { item in
                        if case .live(_, let later, _) = item { return later == own }
                        return false
                    }
            }
            var index = 0
            while queuedBytes + size > limit && index < items.count {
                if isSuperseded(index) {
                    items.remove(at: index)
                    owed += 1
                } else {
                    index += 1
                }
            }
            index = 0
            while queuedBytes + size > limit && index < items.count {
                if case .live = items[index] {
                    items.remove(at: index)
                    owed += 1
                } else {
                    index += 1
                }
            }
            if queuedBytes + size > limit {
                owed += 1
                return
            }
            items.append(.live(sequence: sequence, name: name, size: size))
        }

        /// What `pendingChunks` does first: the owed drops become a notice at the front.
        mutating func placeNotice() {
            guard owed > 0 else { return }
            owed = 0
            if items.first == .notice { return }
            items.insert(.notice, at: 0)
        }
    }

    /// The frames in `bytes`, whole.
    static func frames(_ bytes: [UInt8]) -> [Frame] {
        var decoder = FrameDecoder(role: .client)
        decoder.append(contentsOf: bytes)
        var frames: [Frame] = []
        while let frame = try! decoder.next() { frames.append(frame) }
        return frames
    }

    /// Small queues, and one of 160 frames read rarely, where tombstones pile up and are compacted away.
    @Test(arguments: [(1, 12, 4), (2, 12, 4), (3, 12, 4), (4, 160, 50)])
    func dropsWhatAScanOfTheQueueWouldDrop(seed: UInt64, frames: Int, readEvery: UInt64) {
        var random = SplitMix(seed: seed)
        let names = ["a", "bb", "ccc", "dddd", "e", "ffffff", "g", "hh"]
        let limit = frames * OutboundQueueTests.frameSize
        var queue = OutboundQueue(limit: limit)
        queue.setPolicy(.coalesce)
        var model = Model(limit: limit)
        var sequence: UInt64 = 0
        for _ in 0..<4_000 {
            if random.next() % readEvery != 0 {
                sequence += 1
                // Mostly a few hot names, sometimes a fresh one, so both kinds of drop happen.
                let name = random.next() % 5 == 0 ? "n\(sequence)" : names[Int(random.next() % UInt64(names.count))]
                let frame = OutboundQueueTests.notify(sequence, name: name)
                frame.withUnsafeBytes { _ = queue.enqueueLive($0, sequence: sequence) }
                model.offer(sequence, name: name, size: frame.count)
            } else {
                // Write a few whole frames, as a subscriber that reads now and then.
                model.placeNotice()
                let (_, bytes) = OutboundQueueTests.pending(&queue)
                let offered = Self.frames(bytes)
                let count = min(offered.count, Int(random.next() % 4))
                let written = offered.prefix(count)
                let byteCount = written.reduce(0) { $0 + $1.encodedSize }
                _ = queue.didWrite(byteCount)
                var expected: [Model.Item] = []
                for frame in written {
                    switch frame {
                    case .notify(let notify):
                        expected.append(.live(sequence: notify.sequence, name: notify.name, size: frame.encodedSize))
                    case .dropped: expected.append(.notice)
                    default: Issue.record("unexpected \(frame)")
                    }
                }
                #expect(Array(model.items.prefix(count)) == expected)
                model.items.removeFirst(count)
            }
            #expect(queue.queuedBytes == model.queuedBytes)
        }
        if frames > 100 { #expect(queue.coalesce.compactions > 0) }
        model.placeNotice()
        let rest = OutboundQueueTests.drain(&queue)
        #expect(
            OutboundQueueTests.sequences(rest)
                == model.items.compactMap { item in
                    if case .live(let sequence, _, _) = item { return sequence }
                    return nil
                }
        )
    }

    /// A stuck subscriber whose queue is full, and posts that each go to a new name: nothing is superseded, and
    /// finding that out costs nothing per queued frame.
    @Test func aFullQueueOfDistinctNamesCostsConstantWorkPerPost() {
        var queue = OutboundQueue(limit: 1 << 20)
        queue.setPolicy(.coalesce)
        let posts = 40_000  // ~1.6 MB of frames: the queue is full after ~25,000
        for sequence in UInt64(1)...UInt64(posts) {
            OutboundQueueTests.notify(sequence, name: "name.\(sequence)").withUnsafeBytes {
                _ = queue.enqueueLive($0, sequence: sequence)
            }
        }
        #expect(queue.queuedBytes > (1 << 20) - 100)
        // One check per post, of the name's previous frame, and none found: at most one per post.
        #expect(queue.coalesce.examined <= posts)
    }

    /// The hot name at the back of a full queue of other names: each post supersedes the frame just before it,
    /// which is found where it is, not by a walk from the front; tombstones do not pile up.
    @Test func aHotNameBehindAFullQueueCostsConstantWorkPerPost() {
        var queue = OutboundQueue(limit: 1 << 20)
        queue.setPolicy(.coalesce)
        var sequence: UInt64 = 0
        while queue.queuedBytes < (1 << 20) - 2 * OutboundQueueTests.frameSize - 16 {
            sequence += 1
            OutboundQueueTests.notify(sequence, name: "cold.\(sequence)").withUnsafeBytes {
                _ = queue.enqueueLive($0, sequence: sequence)
            }
        }
        let cold = queue.entries.count
        queue.coalesce.examined = 0
        let posts = 50_000
        for _ in 0..<posts {
            sequence += 1
            OutboundQueueTests.notify(sequence, name: "hot.name").withUnsafeBytes {
                _ = queue.enqueueLive($0, sequence: sequence)
            }
        }
        // Each post: one position check to note the superseded frame, one to drop it; the compactions add one
        // check per record each time tombstones reach half the records, so at most about two more per post.
        #expect(queue.coalesce.examined <= 5 * posts)
        #expect(queue.entries.count <= 2 * cold + 200)
        // The cold frames are all still there, oldest first, then the newest hot one.
        let frames = OutboundQueueTests.drain(&queue)
        let delivered = OutboundQueueTests.sequences(frames)
        #expect(delivered.count == cold + 1)
        #expect(delivered.last == sequence)
        #expect(delivered.dropLast() == Array(1...UInt64(cold)))
    }
}

/// A small deterministic generator, so a failing seed fails again.
struct SplitMix {
    var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
