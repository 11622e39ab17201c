import HeraldMQTTBridge
import Testing

struct LocalInboxTests {
    @Test func asksForOneWakeUpPerBatchNotPerElement() {
        let inbox = LocalInbox<Int>(limit: 10)
        #expect(inbox.append(1))
        #expect(!inbox.append(2))
        #expect(!inbox.append(3))
        #expect(inbox.take() == [1, 2, 3])
        // Taken: the next element needs the loop again.
        #expect(inbox.append(4))
        #expect(inbox.take() == [4])
        #expect(inbox.take() == [])
    }

    @Test func dropsTheOldestPastItsLimitAndCountsThem() {
        let inbox = LocalInbox<Int>(limit: 3)
        for value in 0..<5 { _ = inbox.append(value) }
        #expect(inbox.dropped == 2)
        #expect(inbox.take() == [2, 3, 4])
        for value in 0..<3000 { _ = inbox.append(value) }
        #expect(inbox.dropped == 2 + 2997)
        #expect(inbox.take() == [2997, 2998, 2999])
    }
}
