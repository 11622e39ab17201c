import HeraldDBus
import Testing

@Suite struct MalformedTests {
    /// The offset of the first occurrence of `needle` in `bytes`.
    static func offset(of needle: [UInt8], in bytes: [UInt8]) -> Int {
        for start in 0...(bytes.count - needle.count) where Array(bytes[start..<start + needle.count]) == needle {
            return start
        }
        fatalError("\(needle) not found")
    }

    static func code(decoding bytes: [UInt8]) -> DBusError.Code? {
        do {
            _ = try DBusMessage(decoding: bytes)
            return nil
        } catch {
            return error.code
        }
    }

    @Test func nonZeroPaddingIsRefused() {
        var bytes = Vectors.nameAcquired
        // The PATH field's string ends at 46; bytes 46 and 47 pad the next field to 8.
        #expect(bytes[46] == 0 && bytes[47] == 0)
        bytes[46] = 1
        #expect(Self.code(decoding: bytes) == .badPadding)
    }

    @Test func bodyThatDoesNotMatchItsSignatureIsRefused() {
        var bytes = Vectors.helloReply
        // The SIGNATURE field says "s"; claim "u" and four bytes of the string are left over.
        let signature = Self.offset(of: [8, 1, UInt8(ascii: "g"), 0, 1, UInt8(ascii: "s")], in: bytes)
        bytes[signature + 5] = UInt8(ascii: "u")
        #expect(Self.code(decoding: bytes) == .bodyMismatch)
        // Claim "ss": the body ends before the second string.
        var longer = Vectors.helloReply
        longer[signature + 4] = 2
        longer.insert(UInt8(ascii: "s"), at: signature + 6)
        longer[12] += 1
        #expect(Self.code(decoding: longer) != nil)
    }

    @Test func truncatedMessageIsRefused() {
        #expect(Self.code(decoding: Array(Vectors.propertiesChanged.dropLast())) == .truncated)
        #expect(Self.code(decoding: Array(Vectors.propertiesChanged.prefix(10))) == .truncated)
    }

    @Test func bytesAfterTheMessageAreRefused() {
        #expect(Self.code(decoding: Vectors.helloReply + [0]) == .bodyMismatch)
    }

    @Test func stringThatIsNotUTF8IsRefused() {
        var bytes = Vectors.helloReply
        bytes[bytes.count - 3] = 0xFF  // inside the body's ":1.6"
        #expect(Self.code(decoding: bytes) == .badString)
        var withNUL = Vectors.helloReply
        withNUL[withNUL.count - 3] = 0
        #expect(Self.code(decoding: withNUL) == .badString)
    }

    @Test func invalidObjectPathIsRefused() {
        var bytes = Vectors.nameAcquired
        let path = Self.offset(of: Array("/org/freedesktop/DBus".utf8), in: bytes)
        bytes[path + 17] = UInt8(ascii: "-")
        #expect(Self.code(decoding: bytes) == .invalidObjectPath)
    }

    @Test func unknownEndiannessVersionAndSerialZeroAreRefused() {
        var endianness = Vectors.helloReply
        endianness[0] = UInt8(ascii: "x")
        #expect(Self.code(decoding: endianness) == .badHeader)
        var version = Vectors.helloReply
        version[3] = 2
        #expect(Self.code(decoding: version) == .badHeader)
        var serial = Vectors.helloReply
        serial[8] = 0
        #expect(Self.code(decoding: serial) == .badHeader)
        var type = Vectors.helloReply
        type[1] = 0
        #expect(Self.code(decoding: type) == .badHeader)
    }

    @Test func missingRequiredFieldIsRefused() {
        var bytes = Vectors.helloReply
        // Turn REPLY_SERIAL (code 5) into an unknown code: a method return without its reply serial.
        let field = Self.offset(of: [5, 1, UInt8(ascii: "u"), 0], in: bytes)
        bytes[field] = 200
        #expect(Self.code(decoding: bytes) == .badHeaderField)
    }

    @Test func fieldOfTheWrongTypeIsRefused() {
        var bytes = Vectors.helloReply
        let field = Self.offset(of: [5, 1, UInt8(ascii: "u"), 0], in: bytes)
        bytes[field + 2] = UInt8(ascii: "i")
        #expect(Self.code(decoding: bytes) == .badHeaderField)
    }

    @Test(arguments: [
        String(repeating: "a", count: 33) + "y",
        String(repeating: "(", count: 33) + "y" + String(repeating: ")", count: 33),
        String(repeating: "a{sa", count: 17) + "y" + String(repeating: "}", count: 17),
    ])
    func signatureNestedPastTheLimitsIsRefused(signature: String) {
        #expect(throws: DBusError.self) { try DBusType.parse(signature: signature) }
        #expect((try? DBusType.parse(signature: signature)) == nil)
        do {
            _ = try DBusType.parse(signature: signature)
        } catch {
            #expect(error.code == .nestingTooDeep)
        }
    }

    @Test func signaturesAtTheLimitsAreAccepted() throws {
        _ = try DBusType.parse(signature: String(repeating: "a", count: 32) + "y")
        _ = try DBusType.parse(signature: String(repeating: "(", count: 32) + "y" + String(repeating: ")", count: 32))
    }

    @Test(arguments: [
        "a", "(", "()", "(i", "i)", "{sv}", "a{vs}", "a{s}", "a{svs}", "z", String(repeating: "y", count: 256),
    ])
    func malformedSignatureIsRefused(signature: String) {
        do {
            _ = try DBusType.parse(signature: signature)
            Issue.record("'\(signature)' was accepted")
        } catch {
            #expect(error.code == .invalidSignature)
        }
    }

    @Test func variantsNestedPast64AreRefused() {
        var bytes: [UInt8] = []
        for _ in 0..<70 { bytes += [1, UInt8(ascii: "v"), 0] }
        bytes += [1, UInt8(ascii: "y"), 0, 7]
        let code = bytes.withUnsafeBytes { raw -> DBusError.Code? in
            var reader = Unmarshaller(bytes: raw, position: 0, end: raw.count, bigEndian: false)
            do throws(DBusError) {
                _ = try reader.read(.variant)
                return nil
            } catch {
                return error.code
            }
        }
        #expect(code == .nestingTooDeep)
    }

    static func read(_ type: DBusType, from bytes: [UInt8], unixFDs: UInt32 = 0) -> DBusError.Code? {
        bytes.withUnsafeBytes { raw -> DBusError.Code? in
            var reader = Unmarshaller(bytes: raw, position: 0, end: raw.count, bigEndian: false, unixFDs: unixFDs)
            do throws(DBusError) {
                _ = try reader.read(type)
                return nil
            } catch {
                return error.code
            }
        }
    }

    @Test func booleanOtherThanZeroOrOneIsRefused() {
        #expect(Self.read(.boolean, from: [2, 0, 0, 0]) == .badBoolean)
        #expect(Self.read(.boolean, from: [1, 0, 0, 0]) == nil)
    }

    @Test func arrayWhoseElementsOverrunItsLengthIsRefused() {
        // Length 3, but an element is 4 bytes.
        #expect(Self.read(.array(.uint32), from: [3, 0, 0, 0, 1, 0, 0, 0]) == .badArrayLength)
        // Longer than 64 MiB.
        #expect(Self.read(.array(.byte), from: [0, 0, 0, 5]) == .badArrayLength)
        // Longer than what is there.
        #expect(Self.read(.array(.byte), from: [8, 0, 0, 0, 1]) == .truncated)
    }

    @Test func descriptorIndexPastTheMessagesDescriptorsIsRefused() {
        #expect(Self.read(.unixFD, from: [0, 0, 0, 0]) == .badUnixFD)
        #expect(Self.read(.unixFD, from: [0, 0, 0, 0], unixFDs: 1) == nil)
    }

    @Test func messageOverTheBoundIsRefusedFromItsFixedHeader() {
        // A signal whose header claims a 200 MiB body: the decoder refuses it from the first 16 bytes.
        var header = Array(Vectors.nameAcquired.prefix(16))
        let length = UInt32(200 * 1024 * 1024)
        withUnsafeBytes(of: length.littleEndian) { header.replaceSubrange(4..<8, with: $0) }
        var decoder = MessageDecoder()
        decoder.append(header)
        #expect(throws: DBusError(.messageTooLarge, "a message of 209715360 bytes (the bound is 134217728)")) {
            try decoder.nextMessage()
        }
    }

    @Test func configuredBoundIsLowerThanTheSpecifications() throws {
        var decoder = MessageDecoder(maximumLength: 100)
        #expect(decoder.maximumLength == 100)
        decoder.append(Array(Vectors.propertiesChanged.prefix(16)))
        do {
            _ = try decoder.nextMessage()
            Issue.record("a \(Vectors.propertiesChanged.count)-byte message passed a 100-byte bound")
        } catch {
            #expect(error.code == .messageTooLarge)
        }
        #expect(MessageDecoder(maximumLength: 1 << 40).maximumLength == DBusMessage.maximumLength)
    }

    @Test func encoderRefusesWhatTheSpecificationForbids() throws {
        var writer = Marshaller()
        #expect(throws: DBusError.self) { try writer.write(.objectPath("/a/")) }
        #expect(throws: DBusError.self) { try writer.write(.string("a\0b")) }
        #expect(throws: DBusError.self) { try writer.write(.array(.int32, [.string("x")])) }
        #expect(throws: DBusError.self) { try writer.write(.structure([])) }
        var message = try DBusMessage.signal(path: "/", interface: "a.b", member: "C")
        #expect(throws: DBusError.self) { try message.encoded() }  // serial 0
        message.serial = 1
        message.body = [.int32(1)]  // the signature field says nothing
        #expect(throws: DBusError.self) { try message.encoded() }
    }
}
