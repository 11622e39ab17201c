import HeraldDBus
import Testing

@Suite struct VectorTests {
    static let captured: [(String, [UInt8])] = [
        ("helloReply", Vectors.helloReply), ("nameAcquired", Vectors.nameAcquired),
        ("nameOwnerChanged", Vectors.nameOwnerChanged), ("listNamesReply", Vectors.listNamesReply),
        ("getAllReply", Vectors.getAllReply), ("propertiesChanged", Vectors.propertiesChanged),
    ]

    @Test(arguments: captured.map(\.0))
    func capturedMessageReencodesByteForByte(name: String) throws {
        let bytes = Self.captured.first { $0.0 == name }!.1
        let message = try DBusMessage(decoding: bytes)
        #expect(try message.encoded() == bytes)
    }

    @Test func helloReplyCarriesTheUniqueName() throws {
        let message = try DBusMessage(decoding: Vectors.helloReply)
        #expect(message.type == .methodReturn)
        #expect(message.replySerial == 1)
        #expect(message.sender == "org.freedesktop.DBus")
        #expect(message.destination == ":1.6")
        #expect(message.body == [.string(":1.6")])
    }

    @Test func nameAcquiredIsASignalFromTheBus() throws {
        let message = try DBusMessage(decoding: Vectors.nameAcquired)
        #expect(message.type == .signal)
        #expect(message.path == "/org/freedesktop/DBus")
        #expect(message.interface == "org.freedesktop.DBus")
        #expect(message.member == "NameAcquired")
        #expect(message.body == [.string(":1.6")])
    }

    @Test func nameOwnerChangedHasThreeStrings() throws {
        let message = try DBusMessage(decoding: Vectors.nameOwnerChanged)
        #expect(message.member == "NameOwnerChanged")
        #expect(message.body == [.string(":1.6"), .string(""), .string(":1.6")])
    }

    @Test func listNamesReplyIsAnArrayOfStrings() throws {
        let message = try DBusMessage(decoding: Vectors.listNamesReply)
        guard case .array(.string, let names) = message.body.first else {
            Issue.record("not an array of strings: \(message.body)")
            return
        }
        #expect(names.contains(.string("org.freedesktop.UPower")))
    }

    @Test func getAllReplyIsADictOfVariants() throws {
        let message = try DBusMessage(decoding: Vectors.getAllReply)
        #expect(message.signature == "a{sv}")
        let properties = try #require(message.body.first?.stringDictionary)
        #expect(properties["WarningLevel"] == .variant(.uint32(1)))
        #expect(properties["TimeToEmpty"] == .variant(.int64(0)))
        #expect(properties["IsPresent"] == .variant(.boolean(false)))
        #expect(properties.count == 11)
    }

    @Test func propertiesChangedCarriesTheEmittedValues() throws {
        let message = try DBusMessage(decoding: Vectors.propertiesChanged)
        #expect(message.signature == "sa{sv}as")
        #expect(message.body[0] == .string("org.freedesktop.UPower.Device"))
        let changed = try #require(message.body[1].stringDictionary)
        #expect(changed["Percentage"] == .variant(.double(42.5)))
        #expect(changed["State"] == .variant(.uint32(2)))
        #expect(changed["TimeToEmpty"] == .variant(.int64(3600)))
        #expect(changed["IconName"] == .variant(.string("battery-good-symbolic")))
        #expect(changed["IsPresent"] == .variant(.boolean(true)))
        #expect(message.body[2] == .array(.string, []))
    }

    @Test func bigEndianMessageDecodesAndReencodes() throws {
        let message = try DBusMessage(decoding: Vectors.bigEndianPing)
        #expect(message.bigEndian)
        #expect(message.type == .methodCall)
        #expect(message.path == "/")
        #expect(message.member == "Ping")
        #expect(message.body == [.uint32(7)])
        #expect(try message.encoded() == Vectors.bigEndianPing)
    }
}
