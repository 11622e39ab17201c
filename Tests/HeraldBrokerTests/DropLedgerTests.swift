import HeraldWire
import Testing

@testable import HeraldBroker

/// The drops a queue owes as `DROPPED` notices, event by event.
struct DropLedgerTests {
    @Test func dropsAddUpToOneNoticeWithTheirRange() {
        var ledger = DropLedger()
        #expect(ledger.owed == nil)
        #expect(ledger.takeOwed(mergingOpenNotice: false) == nil, "nothing owed, no notice")
        ledger.record(7)
        ledger.record(3)
        ledger.record(9)
        #expect(ledger.owed == Frame.Dropped(count: 3, firstSequence: 3, lastSequence: 9))
        let notice = ledger.takeOwed(mergingOpenNotice: false)
        #expect(notice == Frame.Dropped(count: 3, firstSequence: 3, lastSequence: 9))
        #expect(ledger.owed == nil)
        #expect(ledger.open == notice, "the new notice is open to later drops")
    }

    @Test func laterDropsMergeIntoTheOpenNotice() {
        var ledger = DropLedger()
        ledger.record(2)
        _ = ledger.takeOwed(mergingOpenNotice: false)
        ledger.record(5)
        ledger.record(6)
        let merged = ledger.takeOwed(mergingOpenNotice: true)
        #expect(merged == Frame.Dropped(count: 3, firstSequence: 2, lastSequence: 6))
        #expect(ledger.open == merged)
    }

    @Test func aNoticeThatStartedGoingOutTakesNoMoreDrops() {
        var ledger = DropLedger()
        ledger.record(2)
        _ = ledger.takeOwed(mergingOpenNotice: false)
        ledger.openNoticeStarted()
        #expect(ledger.open == nil)
        ledger.record(5)
        // Placed on its own: the notice in flight keeps the counts it was written with.
        #expect(ledger.takeOwed(mergingOpenNotice: false) == Frame.Dropped(count: 1, firstSequence: 5, lastSequence: 5))
    }

    @Test func removeAllForgetsWhatWasOwed() {
        var ledger = DropLedger()
        ledger.record(1)
        _ = ledger.takeOwed(mergingOpenNotice: false)
        ledger.record(2)
        ledger.removeAll()
        #expect(ledger.owed == nil && ledger.open == nil)
    }

    @Test func mergingIntoANoticeThatIsNotOpenTraps() async {
        await #expect(processExitsWith: .failure) {
            var ledger = DropLedger()
            ledger.record(1)
            _ = ledger.takeOwed(mergingOpenNotice: true)
        }
    }
}
