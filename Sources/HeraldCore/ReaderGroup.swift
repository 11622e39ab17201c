import Synchronization
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension Herald {
    /// Threads that read the connections of many ``Herald``s, each waiting on all of its connections at once, as one
    /// event loop serves many channels: for a process that holds many connections (a bridge, a test harness, a
    /// benchmark), so that they cost a few threads and not one each.
    ///
    /// ```swift
    /// let group = Herald.ReaderGroup()  // one thread per core
    /// var heralds: [Herald] = []
    /// for _ in 0..<100 {
    ///     heralds.append(try await Herald.connect(options: Herald.Options(clientName: "fleet", readerGroup: group)))
    /// }
    /// ```
    ///
    /// Without a group (the default) each ``Herald`` has a reader thread of its own. In a group, connections are
    /// given to its threads in turn, and a thread reads, one read per ready connection per turn, every connection it
    /// was given, so a busy one cannot starve the others; nothing on it blocks on one connection. What changes is what
    /// ``Herald/taskExecutor`` means: a task that prefers it runs on the thread that reads its connection, which also
    /// reads that thread's other connections, and holds all of them up while it runs. `await` gives the thread back.
    ///
    /// A thread runs only while it has connections, so a group nobody uses costs nothing; there is nothing to shut
    /// down. On systems without epoll the group is ignored and each Herald reads on a thread of its own.
    public final class ReaderGroup: Sendable {
        let loops: [ReaderLoop]
        private let turn = Atomic<Int>(0)

        /// A group of `threads` reader threads.
        ///
        /// - Parameter threads: how many, at least 1; nil for one per core: a thread reads and runs the consumers of
        ///   its connections at one core's speed.
        public init(threads: Int? = nil) {
            let count = threads ?? ProcessInfo.processInfo.activeProcessorCount
            loops = (0..<max(1, count)).map { _ in ReaderLoop() }
        }

        /// How many reader threads the group has (not all of them run while they have no connection).
        public var threadCount: Int { loops.count }

        /// The thread for a new connection: each in turn, so connections spread evenly over them.
        func nextLoop() -> ReaderLoop {
            loops[turn.add(1, ordering: .relaxed).oldValue % loops.count]
        }

        /// How many of the group's threads run now (for tests).
        var runningThreads: Int {
            loops.filter(\.isRunning).count
        }
    }
}
