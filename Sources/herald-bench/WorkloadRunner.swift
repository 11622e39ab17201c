import Herald
import HeraldPosix

#if canImport(Glibc)
import Glibc
#endif

/// Runs one workload through the Herald library on both ends, in the harness's phases:
/// 1. publishers connect (`publisherConnections` Heralds, which the P posting tasks share round-robin);
/// 2. subscribers connect (one `Herald` per subscriber connection) and subscribe, one `notifications(matching:)` of
///    the connection's K names (or, with `streamPerName`, one per name), live once it returns (the daemon's `ACK`s);
///    each stream gets its own task doing `for await`, which prefers its Herald's reader thread
///    (`Herald.taskExecutor`) unless told otherwise;
/// 3. (no probes: subscriptions are acknowledged);
/// 4. measure: publishers `post(_:payload:)` under the window, the subscriber side records every delivery.
struct WorkloadRunner {
    let workload: Workload
    let socketPath: String?
    /// The subscribers' daemon when it is not the publishers' (`nil`: the same). `broker_cpu_pct` stays the
    /// publishers' daemon's.
    let subscriberSocketPath: String?
    let brokerPID: Int32?
    let label: String
    /// Seconds before the run is abandoned as timed out.
    let timeout: Double
    /// The subscriber side ends after this long without a delivery once the publishers have finished.
    let drainMilliseconds: Int
    /// Whether the consuming tasks prefer their Herald's `taskExecutor`; otherwise they run on the global pool.
    let consumersOnReaderThread: Bool
    /// Whether each name gets a stream (and a consuming task) of its own; otherwise each connection follows its K
    /// names in one stream, as the harness's C subscriber reads each connection in one loop.
    let streamPerName: Bool
    /// Threads of the `Herald.ReaderGroup` that reads every subscriber connection; nil gives each its own.
    let readerThreads: Int?
    /// Whether a publisher with a full window sleeps until the consumers wake it (``WindowWait``), rather than
    /// looking every 20 µs as bench.c does.
    var publisherBlocksOnWindow = false

    private static let probeKind: UInt16 = 1

    func run() async -> BenchResult {
        let streamsPerConnection = streamPerName ? workload.namesPerSubscriber : 1
        let counters = SharedCounters(
            consumers: workload.subscribers * streamsPerConnection,
            blockingPublishers: publisherBlocksOnWindow ? workload.publishers : 0
        )
        let names = (0..<workload.names).map(Workload.eventName)
        let options = Herald.Options(clientName: "herald-bench")
        var subscriberOptions = options
        subscriberOptions.readerGroup = readerThreads.map { Herald.ReaderGroup(threads: $0) }
        var publishers: [Herald] = []
        var subscribers: [Herald] = []
        var consumers: [(connection: Int, task: Task<StreamTally, Never>)] = []
        var latencies: [ConnectionLatency] = []
        var result = BenchResult(label: label, workload: workload)
        result.streamsPerSubscriber = streamsPerConnection

        let stage: String
        do {
            for _ in 0..<workload.publisherConnections {
                publishers.append(try await Herald.connect(socketPath: socketPath, options: options))
            }
            // The window bounds what is in flight over all connections (W*M), and one stream may hold all of it,
            // so each stream is bounded at that: never unbounded, and never the cause of a loss by itself.
            let policy = BufferingPolicy.bufferingOldest(max(4096, workload.window * workload.subscribers))
            for connection in 0..<workload.subscribers {
                let herald = try await Herald.connect(
                    socketPath: subscriberSocketPath ?? socketPath,
                    options: subscriberOptions
                )
                subscribers.append(herald)
                let latency = ConnectionLatency()
                latencies.append(latency)
                let connectionNames = (0..<workload.namesPerSubscriber).map {
                    names[workload.topic(ofConnection: connection, $0)]
                }
                for k in 0..<streamsPerConnection {
                    let stream = try await herald.notifications(
                        matching: streamPerName ? [connectionNames[k]] : connectionNames,
                        bufferingPolicy: policy
                    )
                    let executor = consumersOnReaderThread ? herald.taskExecutor : nil
                    let delivered = counters.deliveredBy[consumers.count]
                    let task = Task(executorPreference: executor) { [workload] in
                        await Self.consume(
                            stream,
                            connection: connection,
                            workload: workload,
                            delivered: delivered,
                            counters: counters,
                            latency: latency
                        )
                    }
                    consumers.append((connection, task))
                }
            }
            stage = ""
        } catch {
            stage = "setup failed: \(error)"
        }

        if stage.isEmpty {
            await measure(publishers, consumers: consumers, counters: counters, names: names, into: &result)
        } else {
            result.error = stage
            counters.aborted.store(true, ordering: .releasing)
        }
        for consumer in consumers {
            consumer.task.cancel()
            result.add(await consumer.task.value, connection: consumer.connection)
        }
        for latency in latencies {
            result.add(latency)
        }
        for herald in subscribers + publishers {
            await herald.close()
        }
        return result
    }

    /// Phase 4: publishes, waits for the deliveries, and takes the CPU readings around it.
    private func measure(
        _ publishers: [Herald],
        consumers: [(connection: Int, task: Task<StreamTally, Never>)],
        counters: SharedCounters,
        names: [String],
        into result: inout BenchResult
    ) async {
        let broker = brokerPID ?? publishers.first?.daemonPID ?? 0
        let excluded: Set<Int32> = [getpid(), broker]
        let broker0 = CPUAccounting.processSeconds(broker)
        let others0 = CPUAccounting.othersSeconds(excluding: excluded)
        let steal0 = CPUAccounting.stealSeconds()
        let cpu0 = CPUAccounting.processNanoseconds()
        let fanout = workload.fanout
        let sending = (0..<workload.publishers).map { publisher in
            Task { [workload] in
                await Self.publish(
                    publishers[publisher % publishers.count],
                    publisher: publisher,
                    workload: workload,
                    names: names,
                    fanout: fanout,
                    counters: counters
                )
            }
        }

        // The subscriber side's end condition (bench.c run_subscriber), checked every 20 ms.
        let deadline = SystemClock.monotonicNanoseconds() + UInt64(timeout * 1e9)
        let drain = UInt64(drainMilliseconds) * 1_000_000
        var seen: UInt64 = 0
        var lastProgress = SystemClock.monotonicNanoseconds()
        while counters.aborted.load(ordering: .acquiring) == false {
            try? await Task.sleep(for: .milliseconds(20))
            let now = SystemClock.monotonicNanoseconds()
            if now > deadline {
                result.timedOut = true
                break
            }
            let delivered = counters.delivered
            if delivered != seen {
                seen = delivered
                lastProgress = now
            }
            if counters.publishersDone.load(ordering: .acquiring) < workload.publishers { continue }
            if delivered >= counters.expected.load(ordering: .acquiring) { break }
            if now - lastProgress > drain { break }
        }
        let cpu1 = CPUAccounting.processNanoseconds()
        let broker1 = CPUAccounting.processSeconds(broker)
        let others1 = CPUAccounting.othersSeconds(excluding: excluded)
        let steal1 = CPUAccounting.stealSeconds()
        // Stops publishers still in their window wait after a timeout.
        counters.aborted.store(true, ordering: .releasing)
        for task in sending {
            result.add(await task.value)
        }
        result.stalled = counters.stalled.load(ordering: .acquiring)
        if let broker0, let broker1 { result.brokerCPUSeconds = broker1 - broker0 }
        result.othersCPUSeconds = others0 >= 0 && others1 >= 0 ? others1 - others0 : nil
        result.stealSeconds = steal0 >= 0 && steal1 >= 0 ? steal1 - steal0 : nil
        result.clientCPUNanoseconds = cpu1 - cpu0
    }

    /// One subscription's consumer: `for await` over the stream until the run cancels it.
    private static func consume(
        _ stream: HeraldNotifications,
        connection: Int,
        workload: Workload,
        delivered: DeliveryCounter,
        counters: SharedCounters,
        latency: ConnectionLatency
    ) async -> StreamTally {
        var tally = StreamTally()
        // Which names this connection subscribed to, looked up per delivery instead of computed with two divisions.
        let subscribed = (0..<workload.names).map { workload.connection(connection, has: $0) }
        // Latencies recorded here and added to the connection's histogram under its lock in bulk.
        var latencies = LatencyBatch()
        defer { latencies.flush(into: latency) }
        for await notification in stream {
            let now = SystemClock.monotonicNanoseconds()
            if notification.notice != nil { continue }  // a loss: it shows as `lost`
            // In place: `payload` would copy the bytes into a new array per delivery.
            let header = notification.withUnsafePayloadBytes { raw -> (sent: UInt64, topic: UInt32, kind: UInt16)? in
                guard raw.count >= 24 else { return nil }
                return (
                    UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self)),
                    UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: 16, as: UInt32.self)),
                    UInt16(littleEndian: raw.loadUnaligned(fromByteOffset: 22, as: UInt16.self))
                )
            }
            guard let header else {
                tally.malformed += 1
                continue
            }
            if header.kind == probeKind { continue }
            if Int(header.topic) >= subscribed.count || !subscribed[Int(header.topic)] { tally.misrouted += 1 }
            tally.received += 1
            latencies.record(now > header.sent ? now - header.sent : 0, into: latency)
            tally.lastReceive = now
            delivered.add()
            counters.deliveryCounted()
        }
        return tally
    }

    /// bench.c's window wait: looks every 20 µs until at most half the window is outstanding.
    ///
    /// - Returns: false when no delivery came for 2 s (stalled).
    private static func lookUntilTheWindowHasRoom(limit: Int64, counters: SharedCounters) -> Bool {
        // bench.c's publisher runs with a timer slack of 1 ns (prctl PR_SET_TIMERSLACK), so its 20 µs sleeps
        // last about 20 µs; with the default 50 µs slack they lasted 70-90 µs here, and a window-bound run
        // (fan-out 1) measured that wait instead of the library. Per thread, and this task may have moved
        // to another thread since its last wait, so it is set for each wait, a syscall per window.
        SystemClock.setTimerSlack(nanoseconds: 1)
        var seen = counters.delivered
        var seenAt = SystemClock.monotonicNanoseconds()
        while counters.outstanding > limit / 2 && !counters.aborted.load(ordering: .acquiring) {
            // bench.c's sleep_ns(20000), blocking this thread as bench.c blocks its publisher process: a
            // `Task.sleep` goes through libdispatch's timer thread (timerfd, epoll) and a wake-up of a pool
            // thread per wait, which perf put at 12 % of herald-bench fan-out 1's samples: the harness's
            // cost, not the library's.
            SystemClock.sleep(nanoseconds: 20_000)
            let delivered = counters.delivered
            let now = SystemClock.monotonicNanoseconds()
            if delivered != seen {
                seen = delivered
                seenAt = now
            } else if now - seenAt > 2_000_000_000 {
                return false
            }
        }
        return true
    }

    /// `--window-wait block`: sleeps until the deliveries that bring the window down to half have come.
    ///
    /// - Returns: false when no delivery came for 2 s (stalled).
    private static func sleepUntilTheWindowHasRoom(_ wait: WindowWait, limit: Int64, counters: SharedCounters) -> Bool {
        var seen = counters.delivered
        while counters.outstanding > limit / 2 && !counters.aborted.load(ordering: .acquiring) {
            let needed = counters.expected.load(ordering: .acquiring) &- UInt64(limit / 2)
            if wait.wait(until: needed, counters, timeout: .seconds(2)) { continue }
            let delivered = counters.delivered
            if delivered == seen { return false }
            seen = delivered
        }
        return true
    }

    /// The calling thread's CPU time since `stretch`, or 0 if its clock reads less (a stretch begun on another
    /// thread, which `publish` restarts after a post that moved it; this is the guard against an underflow trap).
    private static func cpuSince(_ stretch: UInt64) -> UInt64 {
        let now = CPUAccounting.threadNanoseconds()
        return now >= stretch ? now - stretch : 0
    }

    /// One publisher: sends its share of the messages, under the rate and the window (bench.c run_publisher).
    private static func publish(
        _ herald: Herald,
        publisher: Int,
        workload: Workload,
        names: [String],
        fanout: [Int],
        counters: SharedCounters
    ) async -> PublisherReport {
        var report = PublisherReport()
        var payload = [UInt8](repeating: 0, count: workload.payload)
        let limit = Int64(workload.window * workload.subscribers)
        var count = UInt64(workload.messages / workload.publishers)
        if publisher < workload.messages % workload.publishers { count += 1 }
        let interval = workload.rate > 0 ? 1e9 * Double(workload.publishers) / workload.rate : 0
        let start = SystemClock.monotonicNanoseconds()
        let stop = workload.duration > 0 ? start + UInt64(workload.duration * 1e9) : .max
        report.firstSend = start
        // CPU is summed per stretch between suspensions, each of which runs on one thread.
        var stretch = CPUAccounting.threadNanoseconds()
        var index: UInt64 = 0
        // Deliveries counted when the window was last checked in full.
        var known: UInt64 = 0
        sending: while index < count && !counters.aborted.load(ordering: .acquiring) {
            if interval > 0 {
                let due = start + UInt64(interval * Double(index))
                let now = SystemClock.monotonicNanoseconds()
                if now < due {
                    report.cpuNanoseconds += Self.cpuSince(stretch)
                    try? await Task.sleep(for: .nanoseconds(Int64(due - now)))
                    stretch = CPUAccounting.threadNanoseconds()
                }
            }
            if limit > 0 && counters.isOutstanding(moreThan: limit, known: &known) {
                // The wait counts as the publisher's CPU, as bench.c's cpu_pub_ns counts its publisher's whole loop:
                // it blocks this thread, so the stretch goes on through it.
                let waited =
                    if let wait = counters.windowWaits.dropFirst(publisher).first {
                        Self.sleepUntilTheWindowHasRoom(wait, limit: limit, counters: counters)
                    } else {
                        Self.lookUntilTheWindowHasRoom(limit: limit, counters: counters)
                    }
                guard waited else {
                    counters.stalled.store(true, ordering: .releasing)
                    break sending
                }
            }
            let topic = workload.topic(ofMessage: index, from: publisher)
            let now = SystemClock.monotonicNanoseconds()
            if now >= stop { break }
            // The header: t_send, seq, name index, publisher id, kind 0 (data); little-endian.
            payload.withUnsafeMutableBytes { raw in
                raw.storeBytes(of: now.littleEndian, toByteOffset: 0, as: UInt64.self)
                raw.storeBytes(of: index.littleEndian, toByteOffset: 8, as: UInt64.self)
                raw.storeBytes(of: UInt32(topic).littleEndian, toByteOffset: 16, as: UInt32.self)
                raw.storeBytes(of: UInt16(publisher).littleEndian, toByteOffset: 20, as: UInt16.self)
                raw.storeBytes(of: UInt16(0), toByteOffset: 22, as: UInt16.self)
            }
            counters.expected.add(UInt64(fanout[topic]), ordering: .acquiringAndReleasing)
            let thread = pthread_self()
            do {
                try await herald.post(names[topic], payload: payload)
            } catch {
                report.error = "publish failed: \(error)"
                counters.aborted.store(true, ordering: .releasing)
                break
            }
            if pthread_equal(thread, pthread_self()) == 0 {
                // The post waited for room in the outgoing buffer and the task resumed on another thread: the stretch
                // so far was on the old thread's clock, which this one cannot read; it is left out.
                stretch = CPUAccounting.threadNanoseconds()
            }
            index += 1
        }
        report.cpuNanoseconds += Self.cpuSince(stretch)
        report.lastSend = SystemClock.monotonicNanoseconds()
        report.sent = index
        counters.publishersDone.add(1, ordering: .acquiringAndReleasing)
        return report
    }
}
