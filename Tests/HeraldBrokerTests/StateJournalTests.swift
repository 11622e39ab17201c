import HeraldBroker
import HeraldWire
import Testing

/// The broker's state records, event by event, and a broker restored from them.
struct StateJournalTests {
    static func records(of harness: inout BrokerHarness) -> [StateRecord] {
        var bytes = StateLog.header
        harness.broker.takeStateRecords { bytes.append(contentsOf: $0) }
        var records: [StateRecord] = []
        var offset = StateLog.header.count
        while offset < bytes.count {
            guard
                case .success(let (record, size)) = bytes.withUnsafeBytes({
                    StateRecord.decode(UnsafeRawBufferPointer(rebasing: $0[offset...]))
                })
            else {
                Issue.record("the journal holds a bad record at \(offset)")
                return records
            }
            records.append(record)
            offset += size
        }
        return records
    }

    static func log(of harness: inout BrokerHarness) throws -> StateLog {
        var log = StateLog()
        for record in records(of: &harness) { log.apply(record) }
        return log
    }

    @Test func journalsNothingUnlessAsked() {
        var harness = BrokerHarness()
        let client = harness.connect(1)
        harness.post(client, "a.b", "1", retain: true)
        #expect(!harness.broker.hasStateToWrite)
    }

    @Test func journalsRetainedValuesButNotLivePosts() {
        var harness = BrokerHarness()
        harness.broker.keepsStateLog = true
        let client = harness.connect(1)
        harness.post(client, "live", "x")
        #expect(!harness.broker.hasStateToWrite)
        harness.post(client, "a.b", "1", retain: true)
        harness.post(client, "a.b", "", retain: true)
        let records = Self.records(of: &harness)
        guard records.count == 2, case .retained(let value) = records[0] else {
            Issue.record("expected a value and a clear: \(records)")
            return
        }
        #expect(value.name == "a.b" && value.payload == Array("1".utf8) && value.sequence == 2)
        #expect(records[1] == .cleared(name: "a.b", sequence: 3))
        #expect(!harness.broker.hasStateToWrite)
    }

    private func will(_ name: String, delay: UInt32 = 2000) -> Frame {
        .will(.init(request: 3, delayMilliseconds: delay, name: name, payload: Array("gone".utf8)))
    }

    @Test func journalsAWillFromRegistrationToItsPost() {
        var harness = BrokerHarness()
        harness.broker.keepsStateLog = true
        let client = harness.connect(1)
        harness.send(will("presence.a"), from: client)
        harness.broker.connectionClosed(client, monotonicNow: 1_000)
        harness.broker.postDueWills(monotonicNow: 2_000_001_000, realtimeNow: 5)
        let records = Self.records(of: &harness)
        guard case .willRegistered(let record) = records.first else {
            Issue.record("no will registered: \(records)")
            return
        }
        #expect(record.name == "presence.a" && record.client == "test" && record.uid == 1000)
        #expect(
            Array(records.dropFirst()) == [.willPending(id: record.id, due: 2_000_001_000), .willEnded(id: record.id)]
        )
    }

    @Test func journalsAWillEndedByByeOrWithdrawal() {
        var harness = BrokerHarness()
        harness.broker.keepsStateLog = true
        let client = harness.connect(1)
        harness.send(will("presence.a"), from: client)
        harness.send(.will(.init(request: 4, delayMilliseconds: 0, name: "", payload: [])), from: client)
        harness.send(will("presence.b"), from: client)
        harness.send(.bye, from: client)
        harness.broker.connectionClosed(client, monotonicNow: 1_000)
        let log = (try? Self.log(of: &harness)) ?? StateLog()
        #expect(log.wills.isEmpty)
        #expect(log.lastWillID == 2)
    }

    @Test func aShutdownLeavesWillsInTheLog() throws {
        var harness = BrokerHarness()
        harness.broker.keepsStateLog = true
        let open = harness.connect(1)
        let gone = harness.connect(2)
        harness.send(will("presence.open"), from: open)
        harness.send(will("presence.gone"), from: gone)
        harness.broker.connectionClosed(gone, monotonicNow: 1_000)
        var actions: [BrokerAction] = []
        harness.broker.shutDown(into: &actions)
        harness.broker.connectionClosed(open, monotonicNow: 2_000)
        let log = try Self.log(of: &harness)
        #expect(Set(log.wills.values.map(\.record.name)) == ["presence.open", "presence.gone"])
        #expect(log.wills.values.first { $0.record.name == "presence.gone" }?.due == 2_000_001_000)
    }

    /// A broker rebuilt from the records of another holds the same values, in the same order, and goes on from
    /// the same sequence number.
    @Test func aRestoredBrokerHoldsTheSameValues() throws {
        var first = BrokerHarness()
        first.broker.keepsStateLog = true
        let client = first.connect(1)
        for index in 0..<5 { first.post(client, "v.\(index % 3)", "\(index)", retain: true) }
        let log = try Self.log(of: &first)
        var second = BrokerHarness()
        let counts = second.broker.restore(log, monotonicNow: 0)
        #expect(counts.restored == 3 && counts.leftOut == 0)
        #expect(second.broker.durableState().retained == first.broker.durableState().retained)
        let reader = second.connect(1)
        second.subscribe(reader, 1, "v.*")
        let values = BrokerHarness.notifications(second.output(of: reader))
        #expect(values.count == 3)
        second.post(reader, "v.9", "n", retain: true, request: 8)
        #expect(second.output(of: reader).contains(.ack(.init(request: 8, sequence: 6))))
    }

    /// A retained value's origin (wire version 2) is in its record, and a restored broker replays it with the
    /// value, to a version 2 subscriber.
    @Test func aRetainedValuesOriginSurvivesTheLog() throws {
        var first = BrokerHarness()
        first.broker.keepsStateLog = true
        let client = first.connect(1, version: 2)
        let origin = Frame.Origin(host: "laptop", daemon: "heraldd@laptop", sequence: 9001)
        _ = first.send(
            .post(.init(request: 4, name: "bridge.temp", payload: Array("21".utf8), retain: true, origin: origin)),
            from: client
        )
        let log = try Self.log(of: &first)
        #expect(log.retained["bridge.temp"]?.origin == origin)
        var second = BrokerHarness()
        second.broker.restore(log, monotonicNow: 0)
        let reader = second.connect(1, version: 2)
        second.subscribe(reader, 1, "bridge.*")
        let values: [Frame.Notify] = second.output(of: reader).compactMap {
            if case .notify(let notify) = $0 { return notify }
            return nil
        }
        #expect(values.count == 1)
        #expect(values.first?.origin == origin)
        #expect(values.first?.retained == true)
        #expect(values.first?.payload == Array("21".utf8))
    }

    /// ``Broker/durableBytes`` is the size of a compacted log of the retained values, exactly: what the daemon's
    /// bound of twice the state is measured against.
    @Test func theDurableBytesAreTheCompactedLogsSize() {
        var harness = BrokerHarness()
        harness.broker.keepsStateLog = true
        let plain = harness.connect(1)
        let relayed = harness.connect(2, version: 2)
        for index in 0..<40 {
            harness.post(plain, "v.\(index % 7)", String(repeating: "p", count: index), retain: true)
            _ = harness.send(
                .post(
                    .init(
                        name: "o.\(index % 5)",
                        payload: Array(repeating: 1, count: index + 1),
                        retain: true,
                        origin: Frame.Origin(host: "h\(index)", daemon: index % 2 == 0 ? "" : "dd", sequence: 1)
                    )
                ),
                from: relayed
            )
        }
        harness.post(plain, "v.3", "", retain: true)
        var compacted = StateLog.header
        for record in harness.broker.durableState().snapshot { record.encode(into: &compacted) }
        #expect(harness.broker.durableBytes == compacted.count)
    }

    @Test func aRestoredWillIsPostedWhenItsClientDoesNotComeBack() throws {
        var first = BrokerHarness()
        first.broker.keepsStateLog = true
        let client = first.connect(1)
        first.send(will("presence.a"), from: client)
        let log = try Self.log(of: &first)
        var second = BrokerHarness()
        second.broker.keepsStateLog = true
        second.broker.restore(log, monotonicNow: 10)
        let observer = second.connect(2)
        second.subscribe(observer, 1, "presence.*")
        _ = second.output(of: observer)
        #expect(second.broker.nextWillDeadline == 2_000_000_010)
        #expect(second.broker.postDueWills(monotonicNow: 2_000_000_010, realtimeNow: 1) == 1)
        #expect(BrokerHarness.notifications(second.output(of: observer)).count == 1)
        #expect(try Self.log(of: &second).wills.isEmpty)
    }

    @Test func aRestoredWillIsWithdrawnWhenItsClientRegistersItAgain() throws {
        var first = BrokerHarness()
        first.broker.keepsStateLog = true
        let client = first.connect(1)
        first.send(will("presence.a"), from: client)
        let log = try Self.log(of: &first)
        var second = BrokerHarness()
        second.broker.keepsStateLog = true
        second.broker.restore(log, monotonicNow: 10)
        let back = second.connect(1)
        second.send(will("presence.a"), from: back)
        #expect(second.broker.postDueWills(monotonicNow: 9_000_000_000, realtimeNow: 1) == 0)
        // The will of the connection that came back is the one held, once.
        let state = second.broker.durableState()
        #expect(state.wills.count == 1 && state.wills.values.first?.due == nil)
        second.broker.connectionClosed(back, monotonicNow: 10_000_000_000)
        #expect(second.broker.postDueWills(monotonicNow: 12_000_000_000, realtimeNow: 1) == 1)
    }

    @Test func aWillPendingBeforeTheRestartKeepsItsDeadlineAndIsNotWithdrawn() throws {
        var first = BrokerHarness()
        first.broker.keepsStateLog = true
        let client = first.connect(1)
        first.send(will("presence.a"), from: client)
        first.broker.connectionClosed(client, monotonicNow: 1_000)
        let log = try Self.log(of: &first)
        var second = BrokerHarness()
        second.broker.restore(log, monotonicNow: 5_000)
        let back = second.connect(1)
        second.send(will("presence.a"), from: back)
        #expect(second.broker.nextWillDeadline == 2_000_001_000)
        #expect(second.broker.postDueWills(monotonicNow: 2_000_001_000, realtimeNow: 1) == 1)
    }
}
