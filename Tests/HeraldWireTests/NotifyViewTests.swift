import HeraldWire
import Testing

/// The in-place `NOTIFY` reader against the decoder, on wire.md's vectors and on frames it must leave to the decoder.
struct NotifyViewTests {
    static let vectors = SpecFile.hexVectors()

    /// A live NOTIFY of `name` with fixed small header fields, encoded.
    static func notifyFrame(name: String, payload: [UInt8]) -> [UInt8] {
        Frame.notify(
            Frame.Notify(
                sequence: 1,
                time: 2,
                pid: 3,
                uid: 4,
                gid: 5,
                subscription: 0,
                retained: false,
                name: name,
                payload: payload
            )
        ).encoded()
    }

    /// Decodes `bytes`, one whole frame, as the client does.
    func decoded(_ bytes: [UInt8]) throws -> Frame {
        try Frame.decode(bytes, role: .client)
    }

    @Test(arguments: ["notify", "notify-retained"])
    func readsTheSpecVectorsAsTheDecoderDoes(vector: String) throws {
        let bytes = try #require(Self.vectors[vector])
        guard case .notify(let notify) = try decoded(bytes) else {
            Issue.record("\(vector) is not a NOTIFY")
            return
        }
        // Behind other bytes, as in a read that holds several frames.
        let read = [0xAA, 0xBB, 0xCC] + bytes
        read.withUnsafeBytes { raw in
            guard let view = NotifyView(frameIn: raw, at: 3) else {
                Issue.record("\(vector) was not read in place")
                return
            }
            #expect(view.sequence == notify.sequence)
            #expect(view.time == notify.time)
            #expect(view.pid == notify.pid)
            #expect(view.uid == notify.uid)
            #expect(view.gid == notify.gid)
            #expect(view.subscription == notify.subscription)
            #expect(view.retained == notify.retained)
            #expect(String(decoding: raw[view.name], as: UTF8.self) == notify.name)
            #expect(Array(raw[view.payload]) == notify.payload)
            #expect(view.payload.upperBound == read.count)
        }
    }

    @Test func theNameCheckIsTheCallersWhenGiven() throws {
        let bytes = Self.notifyFrame(name: "session.lock", payload: [1])
        var checked: [String] = []
        let view = bytes.withUnsafeBytes { raw in
            NotifyView(frameIn: raw, at: 0) { name in
                checked.append(String(decoding: name, as: UTF8.self))
                return true
            }
        }
        #expect(checked == ["session.lock"])
        #expect(view != nil)
        // A check that refuses leaves the frame to the decoder, as a name the view cannot read does.
        let refused = bytes.withUnsafeBytes { raw in NotifyView(frameIn: raw, at: 0) { _ in false } }
        #expect(refused == nil)
    }

    @Test func readsAnEmptyPayload() throws {
        let bytes = Self.notifyFrame(name: "a", payload: [])
        let view = try #require(bytes.withUnsafeBytes { NotifyView(frameIn: $0, at: 0) })
        #expect(view.payload.isEmpty)
        #expect(view.name == 39..<40)
    }

    /// Frames the view leaves to the decoder: the decoder then accepts them or says what is wrong.
    @Test(arguments: [
        ("another type", "ack"),
        ("a non-ASCII name", "non-ascii"),
        ("undefined flags", "flags"),
        ("a body too short for its fields", "short"),
        ("a name longer than the body", "long-name"),
        ("an empty segment", "empty-segment"),
        ("a frame not all there", "truncated"),
    ])
    func leavesOtherFramesToTheDecoder(_ what: String, _ kind: String) throws {
        var notify = Self.notifyFrame(name: "a.b", payload: [1, 2, 3])
        switch kind {
        case "ack": notify = try #require(Self.vectors["ack"])
        case "non-ascii":
            notify = Self.notifyFrame(name: "chat.général", payload: [])
        case "flags": notify[5] = 0x02
        case "short":
            notify = Array(notify[0..<4 + 2 + 30])
            notify[0] = 32
        case "long-name": notify[4 + 2 + 32] = 200
        case "empty-segment": notify[4 + 2 + 33] = UInt8(ascii: ".")
        case "truncated": notify.removeLast()
        default: Issue.record("unknown case \(kind)")
        }
        #expect(notify.withUnsafeBytes { NotifyView(frameIn: $0, at: 0) } == nil, "\(what)")
    }

    @Test func takesTheSameFastPathAsTheDecoderForNames() {
        for name in ["a", "a.b", "ev0000", String(repeating: "x", count: 255)] {
            #expect(Array(name.utf8).withUnsafeBytes { Name.isPlainASCIIName($0) }, "\(name)")
        }
        for name in ["", ".a", "a.", "a..b", "a b", "a*", "général", "a\u{7F}", String(repeating: "x", count: 256)] {
            #expect(!Array(name.utf8).withUnsafeBytes { Name.isPlainASCIIName($0) }, "\(name)")
        }
    }
}
