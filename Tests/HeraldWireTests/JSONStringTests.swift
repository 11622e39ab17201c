import HeraldWire
import Testing

@Suite struct JSONStringTests {
    @Test(arguments: [
        ("plain", "\"plain\""),
        ("", "\"\""),
        ("a\"b\\c", "\"a\\\"b\\\\c\""),
        ("line\nfeed\rtab\t", "\"line\\nfeed\\rtab\\t\""),
        ("\u{0}\u{1}\u{1f}", "\"\\u0000\\u0001\\u001f\""),
        ("é → 🦉 \u{7f}", "\"é → 🦉 \u{7f}\""),
        ("</script>\u{2028}", "\"</script>\u{2028}\""),
    ])
    func quotesAsRFC8259Says(text: String, literal: String) {
        #expect(JSONString.quoted(text) == literal)
    }

    @Test func safeInScriptAlsoEscapesWhatCouldEndAScriptOrALine() {
        #expect(
            JSONString.quoted("a</script>\u{2028}\u{2029}\n", safeInScript: true)
                == "\"a\\u003c/script>\\u2028\\u2029\\n\""
        )
    }
}
