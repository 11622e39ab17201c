import HeraldDBus

/// The messages the decode benchmark reads.
enum BenchVectors {
    /// `gdbus emit` of PropertiesChanged on UPower's DisplayDevice, as dbus-daemon delivered it
    /// (Protocols/dbus-vectors.md, propertiesChanged).
    static let capturedPropertiesChanged = hex(
        "6c040101cc000000020000009d00000001016f002d0000002f6f72672f667265656465736b746f702f55506f7765722f"
            + "646576696365732f446973706c6179446576696365000000020173001f0000006f72672e667265656465736b746f702e"
            + "444275732e50726f7065727469657300080167000873617b73767d6173000000030173001100000050726f7065727469"
            + "65734368616e6765640000000000000007017300040000003a312e38000000001d0000006f72672e667265656465736b"
            + "746f702e55506f7765722e446576696365000000a00000000a00000050657263656e7461676500016400000000000000"
            + "00000000004045400500000053746174650001750000000002000000000000000b00000054696d65546f456d70747900"
            + "0178000000000000100e0000000000000800000049636f6e4e616d650001730015000000626174746572792d676f6f64"
            + "2d73796d626f6c69630000000000000009000000497350726573656e74000162000000000100000000000000"
    )

    /// A PropertiesChanged of every property UPower's DisplayDevice has (those of dbusmock's GetAll reply), with the
    /// header fields dbus-daemon adds.
    static func fullPropertiesChanged() throws -> [UInt8] {
        let properties: [(String, DBusValue)] = [
            ("Type", .uint32(2)), ("State", .uint32(2)), ("Percentage", .double(87.5)), ("Energy", .double(41.2)),
            ("EnergyFull", .double(47.1)), ("EnergyRate", .double(9.8)), ("TimeToEmpty", .int64(15_120)),
            ("TimeToFull", .int64(0)), ("IsPresent", .boolean(true)),
            ("IconName", .string("battery-full-symbolic")), ("WarningLevel", .uint32(1)),
        ]
        var message = try DBusMessage.signal(
            path: "/org/freedesktop/UPower/devices/DisplayDevice",
            interface: "org.freedesktop.DBus.Properties",
            member: "PropertiesChanged",
            body: [
                .string("org.freedesktop.UPower.Device"),
                .dictionary(key: .string, value: .variant, properties.map { (.string($0.0), .variant($0.1)) }),
                .array(.string, []),
            ]
        )
        message.fields.append((DBusMessage.FieldCode.sender.rawValue, .string(":1.8")))
        message.serial = 2
        return try message.encoded()
    }

    static func hex(_ text: String) -> [UInt8] {
        var bytes: [UInt8] = []
        var index = text.startIndex
        while index < text.endIndex {
            let next = text.index(index, offsetBy: 2)
            bytes.append(UInt8(text[index..<next], radix: 16)!)
            index = next
        }
        return bytes
    }
}
