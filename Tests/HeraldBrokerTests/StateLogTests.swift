import HeraldWire
import Testing

@testable import HeraldBroker

/// The state log's records byte by byte, and replays of whole, cut and damaged logs.
struct StateLogTests {
    static let value = StateRecord.RetainedValue(
        sequence: 7,
        time: 9,
        pid: -2,
        uid: 1000,
        gid: 100,
        name: "a.b",
        payload: [0x41, 0x42]
    )

    @Test func encodesARetainedValueByteForByte() {
        let body: [UInt8] =
            [1, 0]  // kind, flags
            + [7, 0, 0, 0, 0, 0, 0, 0] + [9, 0, 0, 0, 0, 0, 0, 0]  // sequence, time
            + [0xFE, 0xFF, 0xFF, 0xFF] + [0xE8, 0x03, 0, 0] + [100, 0, 0, 0]  // pid, uid, gid
            + [3, 0] + Array("a.b".utf8) + [2, 0, 0, 0, 0x41, 0x42]
        let encoded = StateRecord.retained(Self.value).encoded
        #expect(Array(encoded[0..<4]) == [UInt8(body.count), 0, 0, 0])
        #expect(Array(encoded[8...]) == body)
        // CRC-32C of "123456789" is 0xE3069283 (RFC 3720's check value): the checksum is the standard one.
        #expect(CRC32C.checksum(Array("123456789".utf8)) == 0xE306_9283)
        #expect(Array(encoded[4..<8]) == withUnsafeBytes(of: CRC32C.checksum(body).littleEndian) { Array($0) })
    }

    /// The eight-bytes-a-step checksum agrees with the definition, a bit at a time, at every length and alignment.
    @Test func theChecksumIsCRC32CAtEveryLength() {
        func bitwise(_ bytes: ArraySlice<UInt8>) -> UInt32 {
            var crc: UInt32 = 0xFFFF_FFFF
            for byte in bytes {
                crc ^= UInt32(byte)
                for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0x82F6_3B78 : crc >> 1 }
            }
            return crc ^ 0xFFFF_FFFF
        }
        let bytes = (0..<300).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
        for start in 0..<8 {
            for end in start..<bytes.count {
                #expect(CRC32C.checksum(Array(bytes[start..<end])) == bitwise(bytes[start..<end]))
            }
        }
    }

    @Test(arguments: [
        StateRecord.retained(value),
        .retained(
            StateRecord.RetainedValue(
                sequence: 1,
                time: 2,
                pid: 3,
                uid: 4,
                gid: 5,
                name: "x",
                payload: [1],
                origin: Frame.Origin(host: "laptop", daemon: "heraldd-7", sequence: 41)
            )
        ),
        .cleared(name: "a.b", sequence: 12),
        .willRegistered(
            StateRecord.WillRecord(
                id: 3,
                delayMilliseconds: 2000,
                retain: true,
                pid: 44,
                uid: 1000,
                gid: 1000,
                client: "chat",
                name: "presence.alice",
                payload: Array("gone".utf8)
            )
        ),
        .willPending(id: 3, due: 123_456_789),
        .willEnded(id: 3),
        .plugins([.init(pid: 12, startTime: 3400), .init(pid: 99, startTime: 3500)]),
        .plugins([]),
        .pluginStarted(.init(pid: 4242, startTime: 77)),
        .pluginEnded(pid: 4242),
    ])
    func decodesWhatItEncodes(_ record: StateRecord) throws {
        let bytes = record.encoded
        let decoded = bytes.withUnsafeBytes { StateRecord.decode($0) }
        guard case .success(let (again, size)) = decoded else {
            Issue.record("\(record) did not decode: \(decoded)")
            return
        }
        #expect(again == record)
        #expect(size == bytes.count)
    }

    /// A log of `count` retained values to names n0…n9, then a will registered, pending, and another ended.
    static func sampleLog(count: Int = 30) -> (bytes: [UInt8], offsets: [Int]) {
        var bytes = StateLog.header
        var offsets: [Int] = []
        for index in 0..<count {
            offsets.append(bytes.count)
            var value = value
            value.sequence = UInt64(index + 1)
            value.name = "n\(index % 10)"
            value.payload = Array("v\(index)".utf8)
            StateRecord.retained(value).encode(into: &bytes)
        }
        offsets.append(bytes.count)
        return (bytes, offsets)
    }

    @Test func replaysAWholeLog() throws {
        let (bytes, _) = Self.sampleLog()
        let replay = try StateLog.replay(bytes)
        #expect(replay.damage == nil)
        #expect(replay.records == 30)
        #expect(replay.validLength == bytes.count)
        #expect(replay.state.retained.count == 10)
        #expect(replay.state.retained["n3"]?.payload == Array("v23".utf8))
        #expect(replay.state.lastSequence == 30)
    }

    @Test func anEmptyLogIsANewOne() throws {
        let replay = try StateLog.replay([])
        #expect(replay.state == StateLog())
        #expect(replay.validLength == 0)
    }

    @Test func aLogWithoutTheHeaderIsUnusable() {
        #expect(throws: StateLog.Unusable.badHeader) { try StateLog.replay(Array("not a log at all".utf8)) }
        #expect(throws: StateLog.Unusable.badHeader) { try StateLog.replay(Array(StateLog.header.prefix(5))) }
    }

    /// The log cut at every byte offset of its last 10 records replays exactly the records wholly before the cut.
    @Test func aLogCutAtAnyByteOfItsLastTenRecordsKeepsTheRecordsBeforeTheCut() throws {
        let (bytes, offsets) = Self.sampleLog()
        let full = try StateLog.replay(bytes)
        for cut in offsets[20]..<bytes.count {
            let replay = try StateLog.replay(Array(bytes[..<cut]))
            let whole = offsets.lastIndex { $0 <= cut }!
            #expect(replay.records == whole, "cut at \(cut)")
            #expect(replay.validLength == offsets[whole], "cut at \(cut)")
            #expect(replay.damage == (cut == offsets[whole] ? nil : .truncated), "cut at \(cut)")
            // Every name holds the value of its last whole record: never a half-written one, never a newer one.
            let expected = try StateLog.replay(Array(bytes[..<offsets[whole]])).state
            #expect(replay.state == expected)
            for (name, value) in replay.state.retained {
                #expect(full.state.retained[name]!.sequence >= value.sequence)
            }
        }
    }

    @Test func aFlippedBitEndsTheReplayAtItsRecord() throws {
        let (bytes, offsets) = Self.sampleLog()
        for record in 20..<30 {
            for byte in offsets[record]..<offsets[record + 1] {
                var damaged = bytes
                damaged[byte] ^= 0x10
                let replay = try StateLog.replay(damaged)
                #expect(replay.records == record, "bit flipped at \(byte)")
                #expect(replay.validLength == offsets[record])
                #expect(replay.damage != nil)
            }
        }
    }

    @Test func aTailOfZerosIsDamageAfterTheLastRecord() throws {
        let (bytes, offsets) = Self.sampleLog()
        for zeros in [1, 7, 8, 4096] {
            let replay = try StateLog.replay(bytes + repeatElement(0, count: zeros))
            #expect(replay.records == 30)
            #expect(replay.validLength == offsets[30])
            #expect(replay.damage == (zeros < 8 ? .truncated : .badLength))
        }
    }

    /// A log written through a mapping ends with ``StateLog/end`` and the zeros reserved after it: its normal end.
    @Test func theEndMarkerAndTheReservedZerosAfterItAreTheLogsEndNotDamage() throws {
        let (bytes, offsets) = Self.sampleLog()
        for zeros in [0, 1, 4096] {
            let replay = try StateLog.replay(bytes + StateLog.end + repeatElement(0, count: zeros))
            #expect(replay.records == 30)
            #expect(replay.validLength == offsets[30])
            #expect(replay.damage == nil)
        }
        // A record cut short over the old marker, the new one after it: damage at the cut record.
        let cut = Array(bytes[..<(offsets[30] - 3)]) + [0, 0, 0]
        let replay = try StateLog.replay(cut + StateLog.end + repeatElement(0, count: 100))
        #expect(replay.records == 29)
        #expect(replay.damage != nil)
        // A marker cut short is damage too.
        let short = try StateLog.replay(bytes + StateLog.end.prefix(6))
        #expect(short.records == 30)
        #expect(short.damage == .truncated)
    }

    @Test func aLengthPastTheLimitIsDamageNotAnAllocation() throws {
        var bytes = StateLog.header
        bytes += [0xFF, 0xFF, 0xFF, 0x7F, 0, 0, 0, 0] + repeatElement(1, count: 20)
        let replay = try StateLog.replay(bytes)
        #expect(replay.damage == .badLength)
        #expect(replay.validLength == StateLog.header.count)
    }

    @Test func willsFollowTheirRecords() throws {
        var state = StateLog()
        let will = StateRecord.WillRecord(
            id: 4,
            delayMilliseconds: 2000,
            retain: false,
            pid: 1,
            uid: 1000,
            gid: 1000,
            client: "c",
            name: "p.a",
            payload: [1]
        )
        state.apply(.willRegistered(will))
        #expect(state.wills[4]?.due == nil)
        state.apply(.willPending(id: 4, due: 99))
        #expect(state.wills[4]?.due == 99)
        var snapshot = StateLog()
        for record in state.snapshot { snapshot.apply(record) }
        #expect(snapshot.wills == state.wills)
        state.apply(.willEnded(id: 4))
        #expect(state.wills.isEmpty)
        #expect(state.lastWillID == 4)
    }

    @Test func aSnapshotRebuildsTheSameState() throws {
        let (bytes, _) = Self.sampleLog()
        var state = try StateLog.replay(bytes).state
        state.apply(.cleared(name: "n4", sequence: 31))
        state.apply(.plugins([.init(pid: 9, startTime: 1)]))
        state.apply(.pluginStarted(.init(pid: 10, startTime: 2)))
        state.apply(.pluginStarted(.init(pid: 11, startTime: 3)))
        state.apply(.pluginEnded(pid: 9))
        var origin = state.retained["n5"]!
        origin.origin = Frame.Origin(host: "desk", daemon: "d", sequence: 5)
        state.apply(.retained(origin))
        var compacted = StateLog.header
        for record in state.snapshot { record.encode(into: &compacted) }
        let again = try StateLog.replay(compacted).state
        #expect(again.retained == state.retained)
        #expect(again.retained["n5"]?.origin == Frame.Origin(host: "desk", daemon: "d", sequence: 5))
        #expect(again.pluginProcesses == [10: 2, 11: 3])
        // The whole set replaces what came before it.
        state.apply(.plugins([]))
        #expect(state.pluginProcesses.isEmpty)
    }

    @Test func aRetainedValueWithAnOriginIsKindSevenByteForByte() {
        var value = Self.value
        value.origin = Frame.Origin(host: "pc", daemon: "d", sequence: 0x0102)
        let body: [UInt8] =
            [7, 0]  // kind, flags
            + [7, 0, 0, 0, 0, 0, 0, 0] + [9, 0, 0, 0, 0, 0, 0, 0]  // sequence, time
            + [0xFE, 0xFF, 0xFF, 0xFF] + [0xE8, 0x03, 0, 0] + [100, 0, 0, 0]  // pid, uid, gid
            + [3, 0] + Array("a.b".utf8) + [2, 0, 0, 0, 0x41, 0x42]
            + [2, 0] + Array("pc".utf8) + [1, 0] + Array("d".utf8) + [2, 1, 0, 0, 0, 0, 0, 0]  // host, daemon, sequence
        let encoded = StateRecord.retained(value).encoded
        #expect(Array(encoded[8...]) == body)
        #expect(
            encoded.count
                == StateRecord.retainedSize(nameCount: 3, payloadCount: 2, origin: value.origin)
        )
    }

    /// A log written in the first layout, byte by byte as the first heraldd wrote it (kind 1 for every retained
    /// value, its flag bit 0 reserved for an origin string), replays in full.
    @Test func aLogInTheFirstLayoutStillReplays() throws {
        func framed(_ body: [UInt8]) -> [UInt8] {
            let checksum = CRC32C.checksum(body)
            return withUnsafeBytes(of: UInt32(body.count).littleEndian) { Array($0) }
                + withUnsafeBytes(of: checksum.littleEndian) { Array($0) } + body
        }
        let credentials: [UInt8] = [0x10, 0, 0, 0] + [0xE8, 0x03, 0, 0] + [0xE8, 0x03, 0, 0]  // pid 16, uid, gid 1000
        let plain: [UInt8] =
            [1, 0] + [5, 0, 0, 0, 0, 0, 0, 0] + [1, 0, 0, 0, 0, 0, 0, 0] + credentials
            + [11, 0] + Array("build.state".utf8) + [5, 0, 0, 0] + Array("green".utf8)
        let withOriginString: [UInt8] =
            [1, 1] + [6, 0, 0, 0, 0, 0, 0, 0] + [2, 0, 0, 0, 0, 0, 0, 0] + credentials
            + [8, 0] + Array("bridge.x".utf8) + [1, 0, 0, 0, 0x31] + [4, 0] + Array("mqtt".utf8)
        let cleared: [UInt8] = [2, 0] + [7, 0, 0, 0, 0, 0, 0, 0] + [5, 0] + Array("gone.".utf8)
        let will: [UInt8] =
            [3, 1] + [2, 0, 0, 0, 0, 0, 0, 0] + [0xD0, 0x07, 0, 0] + credentials
            + [4, 0] + Array("chat".utf8) + [10, 0] + Array("presence.a".utf8) + [1, 0, 0, 0, 0x30]
        let pending: [UInt8] = [4, 0] + [2, 0, 0, 0, 0, 0, 0, 0] + [0x40, 0x42, 0x0F, 0, 0, 0, 0, 0]
        let bytes =
            Array("HRLDSTAT".utf8) + [1, 0, 0, 0] + framed(plain) + framed(withOriginString) + framed(cleared)
            + framed(will) + framed(pending)
        let replay = try StateLog.replay(bytes)
        #expect(replay.damage == nil)
        #expect(replay.records == 5)
        #expect(replay.validLength == bytes.count)
        let state = replay.state
        #expect(state.retained["build.state"]?.payload == Array("green".utf8))
        #expect(state.retained["build.state"]?.origin == nil)
        #expect(state.retained["build.state"]?.pid == 16)
        #expect(state.retained["bridge.x"]?.origin == Frame.Origin(host: "mqtt"))
        #expect(state.lastSequence == 7)
        #expect(state.wills[2]?.record.name == "presence.a")
        #expect(state.wills[2]?.record.retain == true)
        #expect(state.wills[2]?.due == 1_000_000)
        #expect(state.pluginProcesses.isEmpty)
    }
}
