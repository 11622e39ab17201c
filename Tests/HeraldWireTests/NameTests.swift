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
