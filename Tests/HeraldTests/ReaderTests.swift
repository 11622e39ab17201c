import Foundation
import HeraldTestSupport
import Testing

@testable import Herald
@testable import HeraldCore

/// The reader thread's in-place decoding, through a real heraldd: frames read where they lie, frames left to the
/// decoder, frames larger than one read, and notifications that share one read's bytes.
@Suite struct ReaderTests {
    /// A payload whose bytes say which post and which offset they are, so a misplaced byte shows.
    static func payload(_ index: Int, count: Int) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ index) }
    }

    @Test func deliversNamesThatAreNotPlainASCIIInOrderWithTheOthers() async throws {
        try await withDaemon { daemon in
            let observer = try await connect(daemon)
            let poster = try await connect(daemon)
            let notifications = try await observer.notifications(matching: "chat.**")
            // Non-ASCII names take the decoder's path, the others are read in place: order must hold across both.
            let names = ["chat.général", "chat.a", "chat.日本.x", "chat.b", "chat.général"]
            for (index, name) in names.enumerated() {
                try await poster.post(name, payload: [UInt8(index)])
            }
            let received = await collect(names.count, from: notifications)
            #expect(received.map(\.name) == names)
            #expect(received.map(\.payload) == (0..<names.count).map { [UInt8($0)] })
        }
    }

    @Test func deliversPayloadsLargerThanOneRead() async throws {
        try await withDaemon { daemon in
            let observer = try await connect(daemon)
            let poster = try await connect(daemon)
            let notifications = try await observer.notifications(matching: "big")
            // The largest payload makes a frame larger than the reader's 64 KiB buffer; small ones around it make
            // the large ones start anywhere in a read.
            let sizes = [10, observer.maxPayload, 3, observer.maxPayload, observer.maxPayload - 1, 0, 1000]
            for (index, size) in sizes.enumerated() {
                try await poster.post("big", payload: Self.payload(index, count: size))
            }
            let received = await collect(sizes.count, from: notifications)
            try #require(received.count == sizes.count)
            for (index, size) in sizes.enumerated() {
                #expect(received[index].payload == Self.payload(index, count: size), "post \(index)")
            }
        }
    }

    @Test func deliversABurstWhoseFramesStraddleReads() async throws {
        try await withDaemon { daemon in
            let observer = try await connect(daemon)
            let poster = try await connect(daemon)
            let notifications = try await observer.notifications(matching: "burst.*")
            let count = 3000
            for index in 0..<count {
                try await poster.post("burst.\(index % 7)", payload: Self.payload(index, count: index % 251))
            }
            let received = await collect(count, from: notifications)
            try #require(received.count == count)
            for (index, notification) in received.enumerated() {
                #expect(notification.name == "burst.\(index % 7)")
                #expect(notification.sequence == UInt64(index + 1))
                let bytes = notification.withUnsafePayloadBytes { Array($0) }
                #expect(bytes == Self.payload(index, count: index % 251), "post \(index)")
            }
        }
    }

    @Test func aDeliveredNotificationEqualsOneMadeFromItsFields() async throws {
        try await withDaemon { daemon in
            let observer = try await connect(daemon)
            let poster = try await connect(daemon)
            let notifications = try await observer.notifications(matching: "same.*")
            try await poster.post("same.a", payload: [1, 2, 3])
            try await poster.post("same.b", payload: [1, 2, 3])
            let received = await collect(2, from: notifications)
            try #require(received.count == 2)
            let delivered = received[0]
            let made = HeraldNotification(
                name: "same.a",
                payload: [1, 2, 3],
                sequence: delivered.sequence,
                timeNanoseconds: delivered.timeNanoseconds,
                sender: delivered.sender,
                isRetained: false
            )
            #expect(delivered == made)
            #expect(delivered.hashValue == made.hashValue)
            #expect(delivered.detached() == delivered)
            #expect(Set([delivered, made, received[1]]).count == 2)
            #expect(received[1] != delivered)
        }
    }
}
