import Foundation

/// One run's outcome, printed as the harness prints it: the same JSON fields in the same order and format as
/// bench.c, so `summarize.sh` and `compare.sh` read both alike.
///
/// In one process the harness's `pub_cpu_pct` is the publishers' own CPU (their task's thread time while posting and
/// while waiting in the window, as bench.c counts its publisher's whole loop) and `sub_cpu_pct` the rest of the
/// process: the library's reader threads and the consuming tasks.
struct BenchResult {
    let label: String
    let workload: Workload
    var publishers: [PublisherReport] = []
    /// Per subscriber connection: data deliveries received.
    var received: [UInt64]
    var misrouted: UInt64 = 0
    var malformed: UInt64 = 0
    var lastReceive: UInt64 = 0
    var latency = LatencyHistogram()
    var brokerCPUSeconds: Double?
    var othersCPUSeconds: Double?
    var stealSeconds: Double?
    var clientCPUNanoseconds: UInt64 = 0
    /// Streams (and consuming tasks) per subscriber connection: 1, or one per name with `--streams name`.
    var streamsPerSubscriber = 1
    var stalled = false
    var timedOut = false
    var error = ""

    init(label: String, workload: Workload) {
        self.label = label
        self.workload = workload
        self.received = [UInt64](repeating: 0, count: workload.subscribers)
    }

    mutating func add(_ tally: StreamTally, connection: Int) {
        received[connection] += tally.received
        misrouted += tally.misrouted
        malformed += tally.malformed
        lastReceive = max(lastReceive, tally.lastReceive)
    }

    mutating func add(_ latencies: ConnectionLatency) {
        latencies.histogram.withLock { latency.merge($0) }
    }

    mutating func add(_ report: PublisherReport) {
        publishers.append(report)
        if let failure = report.error, error.isEmpty { error = failure }
    }

    /// The counts the harness derives from what each publisher actually sent.
    private var accounting: (sent: UInt64, expected: UInt64, delivered: UInt64, lost: UInt64, extra: UInt64) {
        var perTopic = [UInt64](repeating: 0, count: workload.names)
        var sent: UInt64 = 0
        for (publisher, report) in publishers.enumerated() {
            sent += report.sent
            if workload.names == 1 {
                perTopic[0] += report.sent
                continue
            }
            var index: UInt64 = 0
            while index < report.sent {
                perTopic[workload.topic(ofMessage: index, from: publisher)] += 1
                index += 1
            }
        }
        var expected: UInt64 = 0
        var delivered: UInt64 = 0
        var lost: UInt64 = 0
        var extra: UInt64 = 0
        for connection in 0..<workload.subscribers {
            var owed: UInt64 = 0
            for k in 0..<workload.namesPerSubscriber { owed += perTopic[workload.topic(ofConnection: connection, k)] }
            expected += owed
            delivered += received[connection]
            if received[connection] < owed {
                lost += owed - received[connection]
            } else {
                extra += received[connection] - owed
            }
        }
        return (sent, expected, delivered, lost, extra)
    }

    var isOK: Bool {
        let counts = accounting
        return error.isEmpty && !timedOut && !stalled && counts.lost == 0 && counts.extra == 0 && misrouted == 0
            && malformed == 0 && counts.delivered > 0
    }

    /// The JSON line.
    var json: String {
        let counts = accounting
        let sending = publishers.filter { $0.sent > 0 }
        let start = sending.map(\.firstSend).min() ?? 0
        let publishEnd = publishers.map(\.lastSend).max() ?? 0
        let elapsed = counts.sent > 0 && lastReceive > start ? Double(lastReceive - start) / 1e9 : 0
        let publishing = counts.sent > 0 && publishEnd > start ? Double(publishEnd - start) / 1e9 : 0
        func percent(_ seconds: Double?) -> Double {
            guard let seconds, elapsed > 0 else { return -1 }
            return 100 * seconds / elapsed
        }
        let publisherCPU = Double(publishers.reduce(0) { $0 + $1.cpuNanoseconds }) / 1e9
        let clientCPU = Double(clientCPUNanoseconds) / 1e9
        let safeError = String(
            error.map { $0 == "\"" || $0 == "\\" || $0.asciiValue.map { $0 < 32 } == true ? "'" : $0 }
        )
        var line = "{\"peer\":\"\(label)\",\"workload\":\"\(workload.name)\",\"subscribers\":\(workload.subscribers),"
        line += "\"publishers\":\(workload.publishers),\"publisher_connections\":\(workload.publisherConnections),"
        line += "\"names\":\(workload.names),"
        line += "\"names_per_sub\":\(workload.namesPerSubscriber),\"streams_per_sub\":\(streamsPerSubscriber),"
        line += "\"payload\":\(workload.payload),"
        line += String(format: "\"rate\":%.0f,", workload.rate)
        line += "\"window\":\(workload.window),\"batch\":1,"
        line += "\"messages_sent\":\(counts.sent),\"expected\":\(counts.expected),\"delivered\":\(counts.delivered),"
        line +=
            "\"lost\":\(counts.lost),\"extra\":\(counts.extra),\"misrouted\":\(misrouted),\"malformed\":\(malformed),"
        line += String(format: "\"elapsed_s\":%.4f,", elapsed)
        line += String(format: "\"publish_rate\":%.0f,", publishing > 0 ? Double(counts.sent) / publishing : 0)
        line += String(format: "\"delivery_rate\":%.0f,", elapsed > 0 ? Double(counts.delivered) / elapsed : 0)
        line += String(
            format: "\"lat_p50_us\":%.2f,\"lat_p99_us\":%.2f,\"lat_p999_us\":%.2f,\"lat_max_us\":%.2f,",
            latency.percentile(0.5) / 1e3,
            latency.percentile(0.99) / 1e3,
            latency.percentile(0.999) / 1e3,
            counts.delivered > 0 ? Double(latency.maximum) / 1e3 : 0
        )
        line += String(
            format: "\"broker_cpu_pct\":%.1f,\"pub_cpu_pct\":%.1f,\"sub_cpu_pct\":%.1f,",
            percent(brokerCPUSeconds),
            max(0, percent(publisherCPU)),
            max(0, percent(clientCPU - publisherCPU))
        )
        line += String(
            format: "\"other_cpu_pct\":%.1f,\"steal_pct\":%.1f,",
            max(0, percent(othersCPUSeconds)),
            max(0, percent(stealSeconds))
        )
        line += "\"stalled\":\(stalled),\"timed_out\":\(timedOut),\"ok\":\(isOK),\"error\":\"\(safeError)\"}"
        return line
    }
}
