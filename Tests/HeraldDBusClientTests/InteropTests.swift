import Foundation
import HeraldDBus
import HeraldDBusClient
import HeraldLaunch
import HeraldPosix
import HeraldTestSupport
import Testing

/// Our encoding against libdbus's and dbus-python's: one call carrying every type goes through dbus-daemon to a
/// python-dbusmock method, which logs the arguments and sends them back.
@Suite(.requires("dbus-daemon", "gdbus"), .requiresDBusMock)
struct InteropTests {
    /// Every type, `h` (a descriptor passed with the call) included, with a struct holding an array of dict entries of
    /// variants, and empty arrays whose elements need padding.
    static let everyType: [DBusValue] = [
        .byte(0xFE), .boolean(true), .int16(-2), .uint16(65000), .int32(-70000), .uint32(4_000_000_000),
        .int64(-(1 << 40)), .uint64(1 << 63), .double(-1.5), .string("héllo ✓"), .objectPath("/a/b_c/D1"),
        .signature("a{sv}(iu)"), .unixFD(0),
        .structure([
            .string("s"),
            .dictionary(
                key: .string,
                value: .variant,
                [
                    (.string("int"), .variant(.int32(3))), (.string("list"), .variant(.array(.byte, [.byte(1)]))),
                    (.string("pair"), .variant(.structure([.boolean(false), .double(2)]))),
                ]
            ),
        ]),
        .array(.int64, []),
        .dictionary(key: .uint32, value: .array(.string), [(.uint32(1), .array(.string, [.string("x")]))]),
    ]

    @Test func callCarryingEveryTypeIsReadAndAnsweredWithTheSameValues() async throws {
        let directory = TemporaryDirectory()
        let bus = try await SessionBus.start(socketPath: directory.file("bus"))
        let client = try await DBusClient.connect(to: try BusAddress(parsing: bus.address))
        defer { client.close() }
        let changes = try await client.nameOwnerChanges(of: "org.example.Interop")
        let mock = try DBusMock.start(
            ["org.example.Interop", "/org/example/Interop", "org.example.Interop"],
            address: bus.address
        )
        defer { mock.signal(SIGKILL) }
        _ = try await BusTests.waitForOwner(of: "org.example.Interop", client: client, changes: changes)

        let signature = DBusType.signature(of: Self.everyType.map(\.type))
        _ = try await client.call(
            destination: "org.example.Interop",
            path: "/org/example/Interop",
            interface: "org.freedesktop.DBus.Mock",
            member: "AddMethod",
            [
                .string("org.example.Interop"), .string("Echo"), .string(signature), .string(signature),
                .string("ret = tuple(args)"),
            ]
        )
        // The descriptor passed for `h` is one end of a socket pair; the one that comes back must be the same socket.
        let pair = try UnixSocket.pair()
        let mine = pair.first
        let theirs = pair.second
        let (reply, descriptors) = try await client.call(
            try DBusMessage.methodCall(
                destination: "org.example.Interop",
                path: "/org/example/Interop",
                interface: "org.example.Interop",
                member: "Echo",
                body: Self.everyType
            ),
            passing: [mine.rawValue]
        )
        // The other side's reply decodes to the values it was sent back.
        #expect(reply.body == Self.everyType)
        #expect(descriptors.count == 1)
        if let returned = descriptors.first {
            let echoed = FileDescriptor(owning: returned)
            try [UInt8(42)].withUnsafeBytes { try echoed.writeAll($0) }
            var byte: UInt8 = 0
            let count = try withUnsafeMutableBytes(of: &byte) { try theirs.read(into: $0) }
            #expect(count == .processed(1) && byte == 42)
            echoed.close()
        }
        mine.close()
        theirs.close()

        // The other side read the same values: its call log holds them, each in a variant.
        let calls = try await client.call(
            destination: "org.example.Interop",
            path: "/org/example/Interop",
            interface: "org.freedesktop.DBus.Mock",
            member: "GetCalls"
        )
        guard case .array(_, let entries) = calls.first, case .structure(let last)? = entries.last else {
            Issue.record("GetCalls answered \(calls)")
            return
        }
        #expect(last[1] == .string("Echo"))
        #expect(last[2] == .array(.variant, Self.everyType.map { .variant($0) }))
    }
}
