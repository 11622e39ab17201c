import Testing

@testable import HeraldMQTTBridge

struct ImportedRetainedTests {
    @Test func admitsValuesUpToTheCountThenPostsLive() {
        var held = ImportedRetained(maxCount: 2, maxBytes: 1000)
        let result7 = held.admit(name: "a", payloadCount: 1)
        #expect(result7)
        let result9 = held.admit(name: "b", payloadCount: 1)
        #expect(result9)
        let result11 = held.admit(name: "c", payloadCount: 1)
        #expect(!result11, "a third name is past the count")
        let result13 = held.admit(name: "a", payloadCount: 5)
        #expect(result13, "replacing a held value takes no new place")
        #expect(held.count == 2)
        #expect(held.bytes == 1 + 5 + 1 + 1)
    }

    @Test func boundsTheBytesOfNamesAndPayloads() {
        var held = ImportedRetained(maxCount: 100, maxBytes: 10)
        let result21 = held.admit(name: "ab", payloadCount: 8)
        #expect(result21)
        let result23 = held.admit(name: "c", payloadCount: 1)
        #expect(!result23, "11 bytes")
        let result25 = held.admit(name: "ab", payloadCount: 9)
        #expect(!result25, "the replacement alone is over")
        let result27 = held.admit(name: "ab", payloadCount: 3)
        #expect(result27)
        let result29 = held.admit(name: "c", payloadCount: 4)
        #expect(result29)
        #expect(held.bytes == 10)
    }

    @Test func aClearIsAlwaysAdmittedAndFreesItsPlace() {
        var held = ImportedRetained(maxCount: 1, maxBytes: 100)
        let result36 = held.admit(name: "a", payloadCount: 3)
        #expect(result36)
        let result38 = held.admit(name: "never.held", payloadCount: 0)
        #expect(result38)
        let result40 = held.admit(name: "a", payloadCount: 0)
        #expect(result40)
        #expect(held.count == 0 && held.bytes == 0)
        let result43 = held.admit(name: "b", payloadCount: 3)
        #expect(result43)
    }
}
