import Foundation
import HeraldPosix
import HeraldTestSupport
import Synchronization
import Testing

@testable import Herald
@testable import HeraldCore

/// `Herald.watchForeignDescriptor`: the reader thread watches a descriptor of the app's with its socket, calls its
/// handler on that thread, says when it stops watching it (reconnecting) and when it watches it again, and a
/// descriptor no longer registered is not read any more.
@Suite struct ForeignDescriptorTests {
    /// What the handlers saw.
    final class Seen: Sendable {
        let reads = Mutex<[Bool]>([])
        let changes = Atomic<Int>(0)
    }

    /// An eventfd the test signals, and the registration that drains it on the reader thread.
    final class Watched: Sendable {
        let eventFD: EventFD
        let seen = Seen()
        let foreign: ForeignDescriptor

        init(_ herald: Herald) throws {
            let eventFD = try EventFD()
            let seen = self.seen
            let descriptor = eventFD.rawValue
            foreign = ForeignDescriptor(
                descriptor: descriptor,
                onReadable: {
                    var value: UInt64 = 0
                    _ = withUnsafeMutableBytes(of: &value) { Glibc.read(descriptor, $0.baseAddress, 8) }
                    let onReader = herald.connection.executor.isRunningOnReaderThread
                    seen.reads.withLock { $0.append(onReader) }
                },
                onWatchingChanged: { seen.changes.add(1, ordering: .relaxed) }
            )
            self.eventFD = eventFD
        }

        /// Signals the eventfd and waits for the handler to have run `count` times in all.
        func signal(expecting count: Int) async throws -> Bool {
            try eventFD.signal()
            return try await eventually(timeout: .seconds(10)) { seen.reads.withLock { $0.count } >= count }
        }
    }

    @Test func theReaderThreadReadsTheDescriptorAndStopsAndStartsWithTheConnection() async throws {
        let directory = TemporaryDirectory()
        let first = try await TestDaemon.start(directory: directory)
        let herald = try await connect(first)
        let watched = try Watched(herald)
        herald.watchForeignDescriptor(watched.foreign)
        #expect(watched.seen.changes.load(ordering: .relaxed) == 1, "no report as it was registered")
        #expect(herald.isWatchingForeignDescriptor(watched.foreign))
        let read = try await watched.signal(expecting: 1)
        #expect(read, "the reader thread did not call the handler")
        #expect(watched.seen.reads.withLock { $0 } == [true], "the handler ran off the reader thread")

        // No reader thread while the daemon is gone: the change is reported, and the owner is told it is unwatched.
        try await first.stop(signal: SIGKILL)
        let unwatched = try await eventually(timeout: .seconds(10)) {
            !herald.isWatchingForeignDescriptor(watched.foreign)
        }
        #expect(unwatched)
        #expect(watched.seen.changes.load(ordering: .relaxed) >= 2)

        // The next connection's reader watches it again, and reads what came meanwhile.
        try watched.eventFD.signal()
        let second = try await TestDaemon.start(directory: directory)
        let watchedAgain = try await eventually(timeout: .seconds(20)) {
            herald.isWatchingForeignDescriptor(watched.foreign)
        }
        #expect(watchedAgain)
        let readAgain = try await eventually(timeout: .seconds(10)) { watched.seen.reads.withLock { $0.count } >= 2 }
        #expect(readAgain, "the new reader thread did not read the descriptor")
        #expect(watched.seen.changes.load(ordering: .relaxed) >= 3)

        // Stopped: a signal is not read any more.
        herald.stopWatchingForeignDescriptor(watched.eventFD.rawValue)
        #expect(!herald.isWatchingForeignDescriptor(watched.foreign))
        try watched.eventFD.signal()
        // A round trip through the reader thread after the signal: had it still watched the eventfd, it would have
        // read it by then.
        try await herald.flush()
        _ = try await herald.retainedValue(of: "foreign.none")
        #expect(watched.seen.reads.withLock { $0.count } == 2)
        await herald.close()
        try await second.stop()
    }
}
