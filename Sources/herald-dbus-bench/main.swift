import Foundation
import Herald
import HeraldDBus
import HeraldDBusClient
import HeraldPosix
import Synchronization

// herald-dbus-bench: the cost figures of issue 29, measured in release (see Benchmarks/README.md).
//
//   herald-dbus-bench decode [ITERATIONS]   decoding a PropertiesChanged of UPower's DisplayDevice
//   herald-dbus-bench latency [COUNT]       a signal from another connection to the AsyncSequence consumer
//   herald-dbus-bench gdbus [COUNT]         `gdbus emit` to the consumer, the emitter's start included
//   herald-dbus-bench idle [SECONDS]        context switches of an idle client with its matches set
//   herald-dbus-bench bridge [COUNT]        PropertiesChanged of an MPRIS player to a Herald subscriber of
//                                           media.player.bench, through a running herald-dbus-bridge (issue 30)
//   herald-dbus-bench flood [COUNT]         COUNT PropertiesChanged at 100,000 a second from an MPRIS player, then
//                                           the time until media.player.flood holds the last one
//
// The bus is DBUS_SESSION_BUS_ADDRESS's. Exit codes: 0, 1 on a failure, 64 for a usage error.

let arguments = Array(CommandLine.arguments.dropFirst())
let mode = arguments.first ?? ""
let number = arguments.count > 1 ? Int(arguments[1]) : nil

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.isEmpty ? 0 : sorted[sorted.count / 2]
}

func percentile(_ values: [Double], _ fraction: Double) -> Double {
    let sorted = values.sorted()
    return sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * fraction))]
}

/// An MPRIS player's PropertiesChanged with its playback status and title, as the bridge's players source reads it.
func playerChanged(title: String, status: String) throws -> DBusMessage {
    try DBusMessage.signal(
        path: "/org/mpris/MediaPlayer2",
        interface: "org.freedesktop.DBus.Properties",
        member: "PropertiesChanged",
        body: [
            .string("org.mpris.MediaPlayer2.Player"),
            .dictionary(
                key: .string,
                value: .variant,
                [
                    (.string("PlaybackStatus"), .variant(.string(status))),
                    (
                        .string("Metadata"),
                        .variant(
                            .dictionary(
                                key: .string,
                                value: .variant,
                                [(.string("xesam:title"), .variant(.string(title)))]
                            )
                        )
                    ),
                ]
            ),
            .array(.string, []),
        ]
    )
}

switch mode {
case "decode":
    let iterations = number ?? 200_000
    for (name, bytes) in [
        ("captured (5 properties)", BenchVectors.capturedPropertiesChanged),
        ("full DisplayDevice (11 properties)", try BenchVectors.fullPropertiesChanged()),
    ] {
        // Rounds of 1000 decodes; the median round per decode, so that a preempted round does not count.
        var rounds: [Double] = []
        var checksum = 0
        for _ in 0..<(iterations / 1000) {
            let start = SystemClock.monotonicNanoseconds()
            for _ in 0..<1000 {
                let message = try DBusMessage(decoding: bytes)
                checksum &+= message.body.count
            }
            rounds.append(Double(SystemClock.monotonicNanoseconds() - start) / 1000)
        }
        print(
            "decode \(name), \(bytes.count) bytes: median \(String(format: "%.2f", median(rounds) / 1000)) µs, "
                + "p99 \(String(format: "%.2f", percentile(rounds, 0.99) / 1000)) µs per message (checksum \(checksum))"
        )
    }
case "latency", "gdbus":
    let count = number ?? (mode == "gdbus" ? 200 : 2000)
    let client = try await DBusClient.session()
    let signals = try await client.signals(matching: try MatchRule(interface: "org.example.HeraldBench"))
    let emitter = try await DBusClient.session()
    let address = ProcessEnvironment.value("DBUS_SESSION_BUS_ADDRESS") ?? ""
    var latencies: [Double] = []
    var startOfEmit: [Double] = []
    var iterator = signals.makeAsyncIterator()
    // For gdbus: when each unique name's NameOwnerChanged reached a consumer, recorded by a task of its own.
    let helloSeen = Mutex<[String: UInt64]>([:])
    if mode == "gdbus" {
        let all = try await client.signals(
            matching: try MatchRule(
                sender: "org.freedesktop.DBus",
                interface: "org.freedesktop.DBus",
                member: "NameOwnerChanged"
            )
        )
        Task {
            for await message in all {
                if case .string(let name) = message.body.first, case .string(let new) = message.body.last, !new.isEmpty
                {
                    let now = SystemClock.monotonicNanoseconds()
                    helloSeen.withLock { $0[name] = now }
                }
            }
        }
    }
    for index in 0..<count {
        let sent: UInt64
        if mode == "latency" {
            // Another connection sends the signal, as gdbus emit does: the time is read just before the send.
            var message = try DBusMessage.signal(
                path: "/bench",
                interface: "org.example.HeraldBench",
                member: "Tick",
                body: [.uint32(UInt32(index))]
            )
            message.serial = 0
            sent = SystemClock.monotonicNanoseconds()
            try emitter.send(message)
        } else {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = [
                "gdbus", "emit", "--session", "--object-path", "/bench", "--signal", "org.example.HeraldBench.Tick",
                "uint32 \(index)",
            ]
            process.environment = ["DBUS_SESSION_BUS_ADDRESS": address, "PATH": ProcessEnvironment.value("PATH") ?? ""]
            sent = SystemClock.monotonicNanoseconds()
            try process.run()
        }
        guard let signal = await iterator.next() else { break }
        let arrived = SystemClock.monotonicNanoseconds()
        precondition(signal.body == [.uint32(UInt32(index))], "signal \(index) came as \(signal.body)")
        if mode == "latency" {
            latencies.append(Double(arrived - sent) / 1000)
        } else {
            // gdbus's start is not the emit: the bound is from the bus announcing gdbus's connection (its Hello, just
            // before it emits) to the consumer, read off the same client's NameOwnerChanged, which a task of its own
            // consumes (it may lag this one by a scheduling step: wait for its entry).
            var hello: UInt64?
            for _ in 0..<10_000 {
                let sender = signal.sender ?? ""
                hello = helloSeen.withLock { $0[sender] }
                if hello != nil { break }
                await Task.yield()
            }
            if let hello { startOfEmit.append(Double(arrived - min(hello, arrived)) / 1000) }
            latencies.append(Double(arrived - sent) / 1000)
        }
    }
    if mode == "gdbus" {
        print(
            "gdbus, from the bus announcing gdbus's connection to the consumer (an upper bound of emit to consumer): "
                + "median \(String(format: "%.1f", median(startOfEmit))) µs, "
                + "p99 \(String(format: "%.1f", percentile(startOfEmit, 0.99))) µs"
        )
    }
    print(
        "\(mode) over \(latencies.count) signals: median \(String(format: "%.1f", median(latencies))) µs, "
            + "p99 \(String(format: "%.1f", percentile(latencies, 0.99))) µs, dropped \(signals.droppedCount)"
    )
    emitter.close()
    client.close()
case "idle":
    let seconds = number ?? 60
    let client = try await DBusClient.session()
    var streams: [DBusSignals] = []
    for interface in ["org.freedesktop.DBus.Properties", "org.example.HeraldBench", "org.freedesktop.login1.Session"] {
        streams.append(try await client.signals(matching: try MatchRule(interface: interface)))
    }
    _ = try await client.nameOwnerChanges(of: "org.freedesktop.UPower")
    // The client's own thread is named dbus-client; its context switches are its wake-ups.
    func switches() -> [String: (name: String, switches: Int)] {
        var result: [String: (name: String, switches: Int)] = [:]
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        for task in tasks {
            let name = ((try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8)) ?? "?")
                .trimmingCharacters(in: .whitespacesAndNewlines)
            let status = (try? String(contentsOfFile: "/proc/self/task/\(task)/status", encoding: .utf8)) ?? ""
            var total = 0
            for line in status.split(separator: "\n") where line.contains("ctxt_switches") {
                total +=
                    Int(line.split(separator: "\t").last.map { $0.trimmingCharacters(in: .whitespaces) } ?? "") ?? 0
            }
            // Where the thread sleeps, to tell the client's (in poll) from Swift concurrency's and dispatch's.
            let wchan = (try? String(contentsOfFile: "/proc/self/task/\(task)/wchan", encoding: .utf8)) ?? "?"
            result[task] = (name: "\(name) (sleeping in \(wchan))", switches: total)
        }
        return result
    }
    // A second to settle: the client's thread goes back to poll(2) after delivering the last AddMatch reply, a
    // context switch that belongs to the setup, not to the idle minute.
    SystemClock.sleep(nanoseconds: 1_000_000_000)
    let before = switches()
    print("idle: \(streams.count + 1) matches set; waiting \(seconds) s")
    SystemClock.sleep(nanoseconds: UInt64(seconds) * 1_000_000_000)
    let after = switches()
    for task in after.keys.sorted() {
        let (name, count) = after[task]!
        print("idle: thread \(task) \(name): \(count - (before[task]?.switches ?? 0)) context switches in \(seconds) s")
    }
    client.close()
case "bridge":
    // The player: org.mpris.MediaPlayer2.bench on the session bus; the bridge follows it as media.player.bench.
    let count = number ?? 2000
    let warmup = 50
    let herald = try await Herald.connect()
    let player = try await DBusClient.session()
    _ = try await player.call(
        destination: "org.freedesktop.DBus",
        path: "/org/freedesktop/DBus",
        interface: "org.freedesktop.DBus",
        member: "RequestName",
        [.string("org.mpris.MediaPlayer2.bench"), .uint32(4)]
    )
    let posts = try await herald.notifications(matching: ["media.player.bench"])
    var iterator = posts.makeAsyncIterator()
    func title(_ notification: HeraldNotification) -> String? {
        notification.userInfo?["title"]?.stringValue
    }
    var latencies: [Double] = []
    for index in 0..<(count + warmup) {
        let text = "t\(index)"
        let message = try playerChanged(title: text, status: "Playing")
        // The first signals may come before the bridge has seen the player appear: sent again until one lands.
        var start = SystemClock.monotonicNanoseconds()
        try player.send(message)
        while true {
            guard let notification = await iterator.next() else {
                print("the subscription ended")
                exit(1)
            }
            if title(notification) == text { break }
            if index == 0, !notification.isRetained {
                start = SystemClock.monotonicNanoseconds()
                try player.send(message)
            }
        }
        if index >= warmup { latencies.append(Double(SystemClock.monotonicNanoseconds() - start) / 1000) }
    }
    print(
        "bridge PropertiesChanged -> Herald subscriber, \(count) signals: median \(String(format: "%.0f", median(latencies))) µs, "
            + "p90 \(String(format: "%.0f", percentile(latencies, 0.9))) µs, "
            + "p99 \(String(format: "%.0f", percentile(latencies, 0.99))) µs"
    )

case "flood":
    let count = number ?? 100_000
    let herald = try await Herald.connect()
    let player = try await DBusClient.session()
    _ = try await player.call(
        destination: "org.freedesktop.DBus",
        path: "/org/freedesktop/DBus",
        interface: "org.freedesktop.DBus",
        member: "RequestName",
        [.string("org.mpris.MediaPlayer2.flood"), .uint32(4)]
    )
    // Two messages built once, alternating, and a last one of its own: the sender's cost is the bus's, not encoding.
    let messages = [try playerChanged(title: "a", status: "Playing"), try playerChanged(title: "b", status: "Paused")]
    let last = try playerChanged(title: "last", status: "Playing")
    // Wait until the bridge follows the player.
    while try await herald.retainedValue(of: "media.player.flood") == nil {
        try player.send(messages[0])
        SystemClock.sleep(nanoseconds: 20_000_000)
    }
    let started = SystemClock.monotonicNanoseconds()
    for index in 0..<count {
        let message = index == count - 1 ? last : messages[index % 2]
        while true {
            do {
                try player.send(message)
                break
            } catch {
                SystemClock.sleep(nanoseconds: 100_000)
            }
        }
        if index % 1000 == 999 {
            let due = started + UInt64(index + 1) * 10_000
            let now = SystemClock.monotonicNanoseconds()
            if now < due { SystemClock.sleep(nanoseconds: due - now) }
        }
    }
    let sent = SystemClock.monotonicNanoseconds()
    while try await herald.retainedValue(of: "media.player.flood")?.userInfo?["title"]?.stringValue != "last" {
        SystemClock.sleep(nanoseconds: 1_000_000)
    }
    let done = SystemClock.monotonicNanoseconds()
    print(
        "flood: \(count) PropertiesChanged sent in \(String(format: "%.2f", Double(sent - started) / 1e9)) s "
            + "(\(Int(Double(count) / (Double(sent - started) / 1e9))) a second); media.player.flood held the last "
            + "\(String(format: "%.0f", Double(done - sent) / 1e6)) ms after it was sent"
    )

default:
    FileHandle.standardError.write(Data("usage: herald-dbus-bench decode|latency|gdbus|idle|bridge|flood [N]\n".utf8))
    exit(64)
}
