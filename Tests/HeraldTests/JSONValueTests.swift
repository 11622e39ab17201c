import Herald
import Testing

/// The userInfo codec: deterministic compact output, and decoding that never traps.
@Suite struct JSONValueTests {
    @Test(
        arguments: [
            (["user": "alice"], #"{"user":"alice"}"#),
            (["b": 1, "a": 2, "c": 3], #"{"a":2,"b":1,"c":3}"#),
            (["n": 3], #"{"n":3}"#),
            (["n": -42], #"{"n":-42}"#),
            (["n": 3.5], #"{"n":3.5}"#),
            (["n": 0.1], #"{"n":0.1}"#),
            (["n": 9_007_199_254_740_992], #"{"n":9007199254740992}"#),
            (["path": "a/b"], #"{"path":"a/b"}"#),
            (["q": "say \"hi\"\\"], #"{"q":"say \"hi\"\\"}"#),
            (["c": "line\nnext\ttab\u{1}"], #"{"c":"line\nnext\ttab\u0001"}"#),
            (["u": "chat.room.général"], #"{"u":"chat.room.général"}"#),
            (["t": true, "f": false, "z": nil], #"{"f":false,"t":true,"z":null}"#),
            (["a": [1, "two", [3]], "o": ["k": [:]]], #"{"a":[1,"two",[3]],"o":{"k":{}}}"#),
            ([:], "{}"),
        ] as [([String: JSONValue], String)]
    )
    func encodesCompactSortedJSON(object: [String: JSONValue], expected: String) {
        let bytes = JSONValue.encodeObject(object)
        #expect(String(decoding: bytes, as: UTF8.self) == expected)
        #expect(JSONValue.decode(bytes) == .object(object))
    }

    @Test func writesNonFiniteNumbersAsNull() {
        #expect(
            JSONValue.encodeObject(["x": .number(.infinity), "y": .number(.nan)]) == Array(#"{"x":null,"y":null}"#.utf8)
        )
    }

    @Test(arguments: [
        #"{"state":"away","since":"2026-01-01T00:00:00Z"}"#,
        #"[1, 2.5, -3e2, true, false, null, "x", {"k": []}]"#,
        #" { "spaced" : [ 1 , 2 ] } "#,
        #""just a string""#,
        "42",
    ])
    func decodesValidJSON(text: String) {
        #expect(JSONValue.decode(Array(text.utf8)) != nil)
    }

    @Test(arguments: [
        "", "{", "}", "[1,", #"{"a"}"#, #"{"a":}"#, "nul", "tru", "01x", "\u{0}", "{\"a\":1}}",
        String(repeating: "[", count: 100_000), String(repeating: "{\"a\":", count: 50_000),
        #"{"a":"\ud800"}"#, "\"\u{1}\"", "1e999999",
    ])
    func decodingNeverTraps(text: String) {
        _ = JSONValue.decode(Array(text.utf8))
    }

    @Test func decodingInvalidUTF8GivesNil() {
        #expect(JSONValue.decode([0x22, 0xFF, 0xFE, 0x22]) == nil)
        #expect(JSONValue.decode([0x7B, 0x80]) == nil)
    }

    @Test func distinguishesBooleansFromNumbers() {
        #expect(JSONValue.decode(Array(#"[true, 1, 0, false]"#.utf8)) == [true, 1, 0, false])
    }

    @Test func userInfoIsNilUnlessThePayloadIsAnObject() {
        #expect(JSONValue.decode(Array("[1]".utf8)) == [1])
        #expect(JSONValue.decode([]) == nil)
    }

    @Test func roundTripsThroughCodable() throws {
        let value: JSONValue = ["a": [1, 2.5, "x", nil, true], "b": ["c": "d/e"]]
        #expect(JSONValue.decode(value.encoded) == value)
        #expect(value["b"]?["c"]?.stringValue == "d/e")
    }
}
