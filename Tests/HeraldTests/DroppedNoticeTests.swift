import Foundation
import Herald
import HeraldTestSupport
import Testing

/// A consumer too slow for its stream's buffer learns exactly what it lost.
@Suite struct DroppedNoticeTests {
    @Test func aSlowConsumerGetsADroppedNoticeWithTheExactCount() async throws {
        try await withDaemon { daemon in
            let observer = try await connect(daemon)
            let poster = try await connect(daemon)
            let notifications = try await observer.notifications(
                matching: "flood.*",
                bufferingPolicy: .bufferingOldest(2)
            )
            var sequences: [UInt64] = []
            for _ in 0..<10 {
                sequences.append(try await poster.postAcknowledged("flood.item", payload: Array("{}".utf8)))
            }
            // After the PING's ACK, the reader has routed all ten: two fit, eight were dropped.
            try await observer.flush()
            let buffered = await collect(2, from: notifications)
            #expect(buffered.map(\.sequence) == Array(sequences[0..<2]))
            // With room again, the notice goes in before the next notification, where the gap is.
            try await poster.post("flood.after")

            let received = await collect(2, from: notifications)
            try #require(received.count == 2)
            let notice = received[0]
            #expect(notice.name == "herald.dropped")
            #expect(notice.notice == .dropped(count: 8, firstSequence: sequences[2], lastSequence: sequences[9]))
            #expect(
                notice.userInfo == [
                    "count": 8, "firstSequence": .number(Double(sequences[2])),
                    "lastSequence": .number(Double(sequences[9])),
                ]
            )
            #expect(notice.sequence == sequences[9])
            #expect(notice.sender.pid == daemon.pid)
            #expect(notice.sender.uid == getuid())
            #expect(notice.isRetained == false)
            #expect(received[1].name == "flood.after")
        }
    }

    @Test func everyMatchingStreamReportsItsOwnLosses() async throws {
        try await withDaemon { daemon in
            let herald = try await connect(daemon)
            let small = try await herald.notifications(matching: "burst.*", bufferingPolicy: .bufferingOldest(2))
            let large = try await herald.notifications(matching: "burst.**", bufferingPolicy: .unbounded)
            for _ in 0..<5 {
                try await herald.post("burst.x")
            }
            try await herald.flush()
            #expect(await collect(2, from: small).map(\.name) == ["burst.x", "burst.x"])
            try await herald.post("burst.end")
            let fromSmall = await collect(2, from: small)
            #expect(fromSmall.map(\.name) == ["herald.dropped", "burst.end"])
            if case .dropped(let count, _, _) = fromSmall.first?.notice {
                #expect(count == 3)
            } else {
                Issue.record("no drop notice: \(fromSmall)")
            }
            let fromLarge = await collect(6, from: large)
            #expect(fromLarge.map(\.name) == Array(repeating: "burst.x", count: 5) + ["burst.end"])
        }
    }
}
