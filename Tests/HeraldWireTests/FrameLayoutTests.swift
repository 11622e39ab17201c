import HeraldWire
import Testing

/// `FrameLayout`, the one place the header's and `NOTIFY`'s offsets are written down, against wire.md: its tables
/// (each field where the previous one ends) and its `notify` vectors (each field read at its offset).
struct FrameLayoutTests {
    /// The header table of wire.md, "Frames": `length` u32, `type` u8, `flags` u8, then the body.
    @Test func theHeaderFieldsFollowOneAnother() {
        #expect(FrameLayout.length == 0)
        #expect(FrameLayout.type == FrameLayout.length + FrameLayout.lengthSize)
        #expect(FrameLayout.flags == FrameLayout.type + 1)
        #expect(FrameLayout.body == FrameLayout.flags + 1)
        #expect(FrameLayout.body == frameHeaderSize)
    }

    /// The `NOTIFY` table of wire.md: sequence u64, time u64, pid i32, uid u32, gid u32, subscription u32, then the
    /// name as a str8.
    @Test func theNotifyFieldsFollowOneAnother() {
        typealias Notify = FrameLayout.Notify
        #expect(Notify.sequence == FrameLayout.body)
        #expect(Notify.time == Notify.sequence + MemoryLayout<UInt64>.size)
        #expect(Notify.pid == Notify.time + MemoryLayout<UInt64>.size)
        #expect(Notify.uid == Notify.pid + MemoryLayout<Int32>.size)
        #expect(Notify.gid == Notify.uid + MemoryLayout<UInt32>.size)
        #expect(Notify.subscription == Notify.gid + MemoryLayout<UInt32>.size)
        #expect(Notify.nameLength == Notify.subscription + MemoryLayout<UInt32>.size)
        #expect(Notify.name == Notify.nameLength + 1)
        #expect(Notify.fixedBodySize == Notify.name - FrameLayout.body)
        #expect(Frame.Notify.fixedBodySize == Notify.fixedBodySize)
    }

    /// Reads every field of wire.md's `NOTIFY` vectors at its `FrameLayout` offset and compares it with what the
    /// vector says the frame holds.
    @Test(arguments: ["notify", "notify-retained"])
    func everyFieldOfTheVectorIsWhereTheLayoutSays(name: String) throws {
        let bytes = try #require(WireVectorTests.vectors[name], "wire.md has no vector named \(name)")
        guard case .notify(let notify) = try #require(WireVectorTests.expected[name]) else {
            Issue.record("\(name) is not a NOTIFY")
            return
        }
        typealias Notify = FrameLayout.Notify
        let nameBytes = Array(notify.name.utf8)
        bytes.withUnsafeBytes { raw in
            #expect(Int(raw.loadUnaligned(fromByteOffset: FrameLayout.length, as: UInt32.self)) == bytes.count - 4)
            #expect(raw[FrameLayout.type] == FrameType.notify.rawValue)
            #expect(raw[FrameLayout.flags] == (notify.retained ? FrameFlags.retained : 0))
            #expect(
                UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: Notify.sequence, as: UInt64.self))
                    == notify.sequence
            )
            #expect(
                UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: Notify.time, as: UInt64.self)) == notify.time
            )
            #expect(Int32(littleEndian: raw.loadUnaligned(fromByteOffset: Notify.pid, as: Int32.self)) == notify.pid)
            #expect(UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: Notify.uid, as: UInt32.self)) == notify.uid)
            #expect(UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: Notify.gid, as: UInt32.self)) == notify.gid)
            #expect(
                UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: Notify.subscription, as: UInt32.self))
                    == notify.subscription
            )
            #expect(Int(raw[Notify.nameLength]) == nameBytes.count)
        }
        let payloadStart = Notify.payload(nameCount: nameBytes.count)
        #expect(Array(bytes[Notify.name..<payloadStart]) == nameBytes)
        #expect(Array(bytes[payloadStart...]) == notify.payload)
        #expect(Notify.frameSize(nameCount: nameBytes.count, payloadCount: notify.payload.count) == bytes.count)
    }

    /// The daemon's in-place encoder, which writes by the layout, writes wire.md's live `notify` vector byte for
    /// byte.
    @Test func encodeLiveWritesTheLiveVector() throws {
        let bytes = try #require(WireVectorTests.vectors["notify"])
        guard case .notify(let notify) = try #require(WireVectorTests.expected["notify"]) else {
            Issue.record("notify is not a NOTIFY")
            return
        }
        var encoded = [UInt8](repeating: 0xEE, count: bytes.count + 4)
        let written = encoded.withUnsafeMutableBytes { buffer in
            Array(notify.name.utf8).withUnsafeBytes { name in
                notify.payload.withUnsafeBytes { payload in
                    Frame.Notify.encodeLive(
                        sequence: notify.sequence,
                        time: notify.time,
                        pid: notify.pid,
                        uid: notify.uid,
                        gid: notify.gid,
                        name: name,
                        payload: payload,
                        to: buffer.baseAddress!
                    )
                }
            }
        }
        #expect(written == bytes.count)
        #expect(Array(encoded.prefix(written)) == bytes)
        #expect(encoded.dropFirst(written).allSatisfy { $0 == 0xEE }, "wrote past the frame")
    }

    /// The library's in-place reader, which reads by the layout, reads both vectors as the decoder does.
    @Test(arguments: ["notify", "notify-retained"])
    func notifyViewReadsTheVector(name: String) throws {
        let bytes = try #require(WireVectorTests.vectors[name])
        guard case .notify(let notify) = try #require(WireVectorTests.expected[name]) else {
            Issue.record("\(name) is not a NOTIFY")
            return
        }
        try bytes.withUnsafeBytes { raw in
            let view = try #require(NotifyView(frameIn: raw, at: 0))
            #expect(view.sequence == notify.sequence)
            #expect(view.time == notify.time)
            #expect(view.pid == notify.pid)
            #expect(view.uid == notify.uid)
            #expect(view.gid == notify.gid)
            #expect(view.subscription == notify.subscription)
            #expect(view.retained == notify.retained)
            #expect(Array(raw[view.name]) == Array(notify.name.utf8))
            #expect(Array(raw[view.payload]) == notify.payload)
        }
    }
}
