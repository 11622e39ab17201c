import HeraldWire
import Testing

@testable import Herald
@testable import HeraldCore

/// What a stream's buffer keeps of the reads its notifications point into, once its consumer lags.
@Suite struct NotificationBufferRetentionTests {
    /// `count` notifications of `payloadSize` bytes, read in place from one read of `capacity` bytes.
    func read(_ count: Int, payloadSize: Int, capacity: Int = ReceiveBuffer.standardCapacity) -> [HeraldNotification] {
        let bytes = NotificationBytes(capacity: capacity)
        var starts: [Int] = []
        for index in 0..<count {
            let frame = Frame.notify(
                Frame.Notify(
                    sequence: UInt64(index + 1),
                    time: 0,
                    pid: 1,
                    uid: 1,
                    gid: 1,
                    name: "read.n",
                    payload: [UInt8](repeating: 0x61, count: payloadSize)
                )
            ).encoded()
            starts.append(bytes.count)
            frame.withUnsafeBytes { bytes.append($0) }
        }
        let all = UnsafeRawBufferPointer(start: bytes.base, count: bytes.count)
        return starts.map { HeraldNotification(NotifyView(frameIn: all, at: $0)!, in: bytes) }
    }

    /// A buffer already holding `sharedLimit` notifications: its consumer lags.
    func laggingBuffer() -> NotificationBuffer {
        let buffer = NotificationBuffer(policy: .bufferingOldest(10_000))
        for notification in read(NotificationBuffer.sharedLimit, payloadSize: 10, capacity: 4096) {
            buffer.yield(notification)
        }
        return buffer
    }

    @Test func aLaggingStreamCopiesANotificationThatHoldsLittleOfItsRead() {
        let buffer = laggingBuffer()
        var batch = read(1, payloadSize: 100)
        let before = buffer.queuedRetention()
        #expect(buffer.yield(contentsOf: &batch) == 1)
        let after = buffer.queuedRetention()
        // Its own bytes and a little: not the 64 KiB read.
        #expect(after.retained - before.retained < 1_000)
    }

    @Test func aLaggingStreamKeepsAReadItsNotificationsMostlyHoldAsItIs() {
        let buffer = laggingBuffer()
        // 300 notifications of 150 bytes: 45 KB of a 64 KiB read, the shape of herald-bench fan-out 100.
        var batch = read(300, payloadSize: 150)
        let before = buffer.queuedRetention()
        #expect(buffer.yield(contentsOf: &batch) == 300)
        let after = buffer.queuedRetention()
        #expect(after.retained - before.retained == ReceiveBuffer.standardCapacity)
        #expect(after.retained - before.retained <= 2 * (after.own - before.own))
    }

    @Test func aStreamThatKeepsUpTakesEveryReadAsItIs() {
        let buffer = NotificationBuffer(policy: .bufferingOldest(10_000))
        var batch = read(1, payloadSize: 100)
        #expect(buffer.yield(contentsOf: &batch) == 1)
        #expect(buffer.queuedRetention().retained == ReceiveBuffer.standardCapacity)
    }
}
