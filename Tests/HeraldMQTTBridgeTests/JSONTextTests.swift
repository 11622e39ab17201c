import Foundation
import HeraldCore
import Testing

@testable import HeraldMQTTBridge

/// JSONText answers as Foundation's JSONDecoder does (the check the bridge used), without decoding; but for a
/// trailing comma, which RFC 8259 does not allow and JSONDecoder lets through.
struct JSONTextTests {
    static let stricterThanJSONDecoder: Set<String> = ["[1,]", "{\"a\":1,}"]

    static let texts: [String] = [
        #"{"a":1}"#, #" { "a" : [1, 2.5e-3, -0, true, false, null, "x\"\\\/\u00e9"] } "#, "[]", "{}", "[[[]]]",
        "0", "-12.5E+7", "\"text\"", "true", "null", "\"é ünïcode\"",
        "", " ", "{", "}", "[1,]", "{\"a\":}", "{\"a\" 1}", "01", "1.", ".5", "-", "1e", "tru", "nul", "\"open",
        "\"bad \\x escape\"", "\"tab\there\"", "[1] [2]", "{'a':1}", "NaN", "21.5 degrees", "{\"a\":1}}",
        "\"\\u12G4\"", "[1,2", "{\"a\":1,}",
    ]

    @Test(arguments: texts)
    func agreesWithJSONDecoder(text: String) {
        let bytes = Array(text.utf8)
        if Self.stricterThanJSONDecoder.contains(text) {
            #expect(!JSONText.isValid(bytes) && JSONValue.decode(bytes) != nil, "\(text)")
        } else {
            #expect(JSONText.isValid(bytes) == (JSONValue.decode(bytes) != nil), "\(text)")
        }
    }

    @Test func invalidUTF8IsNotJSON() {
        #expect(!JSONText.isValid([0x22, 0xFF, 0x22]))
        #expect(JSONText.isValid(Array("\"é\"".utf8)))
    }

    @Test func nestingPastTheBoundIsNotJSON() {
        let deep = Array(repeating: UInt8(ascii: "["), count: 600) + Array(repeating: UInt8(ascii: "]"), count: 600)
        #expect(!JSONText.isValid(deep))
        let fine = Array(repeating: UInt8(ascii: "["), count: 100) + Array(repeating: UInt8(ascii: "]"), count: 100)
        #expect(JSONText.isValid(fine))
    }
}
