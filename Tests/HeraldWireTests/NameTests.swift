import HeraldWire
import Testing

struct NameTests {
    @Test(arguments: [
        "session.willResignActive", "a", "chat.room.général", "build.42.done", "x-y_z.@home",
        String(repeating: "a", count: 255),
    ])
    func acceptsValidNames(name: String) {
        #expect(Name.isValid(name))
    }

    @Test(arguments: [
        ("", "it is empty"),
        (".a", "empty segment at byte 0"),
        ("a.", "empty segment at byte 2"),
        ("a..b", "empty segment at byte 2"),
        ("a b", "a space at byte 1"),
        ("a\tb", "control character U+0009 at byte 1"),
        ("a\u{7F}", "control character U+007F at byte 1"),
        ("é\u{85}", "control character U+0085 at byte 2"),
        ("a.*", "'*' at byte 2 (wildcards belong in patterns, not names)"),
        (String(repeating: "a", count: 256), "it is 256 bytes, the limit is 255"),
    ])
    func rejectsInvalidNamesSayingWhy(name: String, reason: String) {
        #expect(throws: WireError(.invalidName, "invalid name \(quoted(name)): \(reason)")) {
            try Name.validate(name)
        }
    }

    @Test func rejectsBytesThatAreNotUTF8() {
        #expect(throws: WireError(.invalidName, "invalid name: not UTF-8")) {
            _ = try Name.decode([0x61, 0xFF, 0x62])
        }
    }

    @Test(arguments: [("herald", true), ("herald.dropped", true), ("heraldry", false), ("my.herald", false)])
    func knowsTheReservedNamespace(name: String, reserved: Bool) {
        #expect(Name.isReserved(name) == reserved)
    }

    private func quoted(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            if scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) {
                out += "\\u{\(String(scalar.value, radix: 16))}"
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}

/// The word-at-a-time check must agree with the rule byte for byte, for every length and position.
struct PlainASCIINameTests {
    static func reference(_ bytes: [UInt8]) -> Bool {
        guard !bytes.isEmpty, bytes.count <= Limits.maxNameBytes else { return false }
        var segment = 0
        for byte in bytes {
            if byte == UInt8(ascii: ".") {
                if segment == 0 { return false }
                segment = 0
            } else if byte <= 0x20 || byte >= 0x7F || byte == UInt8(ascii: "*") {
                return false
            } else {
                segment += 1
            }
        }
        return segment > 0
    }

    @Test func agreesWithTheByteRuleEverywhere() {
        let specials: [UInt8] = [0x00, 0x1F, 0x20, 0x21, 0x2A, 0x2E, 0x7E, 0x7F, 0x80, 0xFF]
        for length in [1, 2, 3, 4, 5, 6, 7, 8, 9, 14, 15, 16, 17, 22, 23, 64, 255, 256] {
            let plain = [UInt8](repeating: UInt8(ascii: "a"), count: length)
            #expect(plain.withUnsafeBytes { Name.isPlainASCIIName($0) } == Self.reference(plain))
            for position in 0..<length {
                for special in specials {
                    var bytes = plain
                    bytes[position] = special
                    let fast = bytes.withUnsafeBytes { Name.isPlainASCIIName($0) }
                    #expect(fast == Self.reference(bytes), "length \(length), byte \(special) at \(position)")
                    if position + 1 < length {
                        // Two dots side by side, across every word boundary.
                        bytes[position] = UInt8(ascii: ".")
                        bytes[position + 1] = UInt8(ascii: ".")
                        let pair = bytes.withUnsafeBytes { Name.isPlainASCIIName($0) }
                        #expect(pair == Self.reference(bytes), "length \(length), '..' at \(position)")
                    }
                }
            }
        }
    }
}
