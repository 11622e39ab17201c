import HeraldWire
import Testing

/// The daemon's in-place POST path must see exactly what `next()` decodes, and refuse exactly what it refuses.
struct PostViewTests {
    /// Decodes `bytes` with `withNextFrame`, turning a view into the `Frame` it stands for.
    static func viaView(
        _ bytes: [UInt8],
        maxPayload: Int = Limits.defaultMaxPayload
    ) -> (Result<Frame?, WireError>, usedView: Bool) {
        var decoder = FrameDecoder(role: .daemon, maxPayload: maxPayload)
        decoder.append(contentsOf: bytes)
        var usedView = false
        do {
            let frame = try decoder.withNextFrame { next -> Frame in
                switch next {
                case .post(let post):
                    usedView = true
                    return .post(post.post)
                case .frame(let frame):
                    return frame
                }
            }
            return (.success(frame), usedView)
        } catch {
            return (.failure(error), usedView)
        }
    }

    static func viaNext(_ bytes: [UInt8], maxPayload: Int = Limits.defaultMaxPayload) -> Result<Frame?, WireError> {
        var decoder = FrameDecoder(role: .daemon, maxPayload: maxPayload)
        decoder.append(contentsOf: bytes)
        return Result { () throws(WireError) -> Frame? in try decoder.next() }
    }

    @Test(arguments: [
        Frame.post(.init(request: 0, name: "session.willResignActive", payload: Array("{}".utf8))),
        Frame.post(.init(request: 7, name: "a", payload: [], retain: true)),
        Frame.post(.init(request: 1, name: "ev0001", payload: [UInt8](repeating: 9, count: 64))),
    ])
    func aPlainPostIsReadInPlaceWithTheSameFields(frame: Frame) throws {
        let (result, usedView) = Self.viaView(frame.encoded())
        #expect(usedView)
        #expect(try result.get() == frame)
    }

    @Test func otherNamesAndFramesTakeTheDecodingPath() throws {
        let unicode = Frame.post(.init(name: "café.open", payload: [1]))
        let (result, usedView) = Self.viaView(unicode.encoded())
        #expect(!usedView)
        #expect(try result.get() == unicode)
        let ping = Frame.ping(.init(request: 3))
        let (pingResult, pingView) = Self.viaView(ping.encoded())
        #expect(!pingView)
        #expect(try pingResult.get() == ping)
    }

    @Test func refusesWhatNextRefuses() {
        var cases: [[UInt8]] = []
        // A payload one byte over the limit.
        cases.append(Frame.post(.init(name: "n", payload: [UInt8](repeating: 0, count: 65))).encoded())
        // An empty segment, a '*', a space, an empty name.
        for name in ["a..b", "a.*", "a b", ""] {
            var bytes: [UInt8] = [0, 0, 0, 0, FrameType.post.rawValue, 0, 0, 0, 0, 0, UInt8(name.utf8.count)]
            bytes += Array(name.utf8)
            bytes.replaceSubrange(0..<4, with: withUnsafeBytes(of: UInt32(bytes.count - 4).littleEndian, Array.init))
            cases.append(bytes)
        }
        // Undefined flags, and a body that ends inside the name.
        var flagged = Frame.post(.init(name: "n", payload: [])).encoded()
        flagged[5] = 0x80
        cases.append(flagged)
        cases.append([7, 0, 0, 0, FrameType.post.rawValue, 0, 0, 0, 0, 0, 9])
        for bytes in cases {
            let (result, usedView) = Self.viaView(bytes, maxPayload: 64)
            #expect(!usedView, "the view took \(bytes)")
            let expected = Self.viaNext(bytes, maxPayload: 64)
            guard case .failure(let error) = expected else {
                Issue.record("next() accepted \(bytes)")
                continue
            }
            #expect(throws: error) { try result.get() }
        }
    }

    @Test func aPartialFrameWaitsAndAnErrorIsRemembered() throws {
        var decoder = FrameDecoder(role: .daemon)
        let bytes = Frame.post(.init(name: "n", payload: [1, 2, 3])).encoded()
        decoder.append(contentsOf: bytes.prefix(5))
        #expect(try decoder.withNextFrame { _ in true } == nil)
        decoder.append(contentsOf: bytes.dropFirst(5))
        #expect(try decoder.withNextFrame { _ in true } == true)
        decoder.append(contentsOf: [1, 0, 0, 0])  // length 1: under the minimum
        #expect(throws: WireError.self) { try decoder.withNextFrame { _ in true } }
        #expect(throws: WireError.self) { try decoder.next() }
    }

    @Test func encodeLiveMatchesTheGeneralEncoder() {
        let notify = Frame.Notify(
            sequence: 0x0102_0304_0506_0708,
            time: 42,
            pid: -5,
            uid: 1000,
            gid: 100,
            name: "session.didBecomeActive",
            payload: Array("{\"user\":\"alice\"}".utf8)
        )
        let expected = Frame.notify(notify).encoded()
        var bytes = [UInt8](repeating: 0xEE, count: expected.count + 8)
        let written = bytes.withUnsafeMutableBytes { buffer in
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
        #expect(written == expected.count)
        #expect(
            Frame.Notify.encodedSize(nameCount: notify.name.utf8.count, payloadCount: notify.payload.count) == written
        )
        #expect(Array(bytes.prefix(written)) == expected)
        #expect(bytes.dropFirst(written).allSatisfy { $0 == 0xEE })
    }

    @Test(arguments: ["herald", "herald.dropped", "heraldx", "heral", "x.herald", "Herald.a", "herald2.a"])
    func reservedNamesAgreeWithName(name: String) throws {
        var decoder = FrameDecoder(role: .daemon)
        decoder.append(contentsOf: Frame.post(.init(name: name, payload: [])).encoded())
        let reserved = try decoder.withNextFrame { next -> Bool? in
            guard case .post(let post) = next else { return nil }
            return post.isReservedName
        }
        #expect(reserved == Name.isReserved(name))
    }
}
