import Testing

@testable import HeraldMQTTBridge

struct ImportKeyTests {
    /// The duplicate check on imports: a message is the same as one seen before exactly when its origin host, daemon
    /// and sequence are, whatever the digest taken when the key was made.
    @Test func aKeyIsSeenBeforeOnlyWhenAllThreeFieldsAreEqual() {
        var seen = RecentSet<ImportKey>(capacity: 16)
        let key = ImportKey(origin: "hostB", daemon: "77", sequence: "5")
        let first = seen.insert(key)
        // Made again from equal strings, one of them built at run time rather than a literal.
        let again = seen.insert(ImportKey(origin: "host" + "B", daemon: "77", sequence: String(5)))
        #expect(first && !again)
        for other in [
            ImportKey(origin: "hostC", daemon: "77", sequence: "5"),
            ImportKey(origin: "hostB", daemon: "78", sequence: "5"),
            ImportKey(origin: "hostB", daemon: "77", sequence: "6"),
            // The fields' boundaries count: these join to the same "hostB77" + "5".
            ImportKey(origin: "hostB7", daemon: "7", sequence: "5"),
        ] {
            let inserted = seen.insert(other)
            #expect(inserted, "\(other) was taken for \(key)")
        }
        #expect(
            ImportKey(origin: "a", daemon: "b", sequence: "c") == ImportKey(origin: "a", daemon: "b", sequence: "c")
        )
        #expect(
            ImportKey(origin: "a", daemon: "b", sequence: "c").hashValue
                == ImportKey(origin: "a", daemon: "b", sequence: "c").hashValue
        )
    }
}
