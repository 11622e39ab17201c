import Foundation
import HeraldBroker
import HeraldWire

/// ContinuousClock loops over the pure parts of the hot path: the frame codec (HeraldWire) and the pattern matcher
/// and `PatternIndex` (HeraldBroker). Each case runs for about `seconds` after a warm-up, in rounds, and reports
/// operations per second and nanoseconds per operation.
struct Microbenchmarks {
    let seconds: Double

    struct Measurement {
        let name: String
        let operations: Int
        let elapsed: Duration

        var nanosecondsPerOperation: Double {
            let (whole, attoseconds) = elapsed.components
            return (Double(whole) * 1e9 + Double(attoseconds) / 1e9) / Double(operations)
        }
    }

    /// Runs `round` (which does `perRound` operations) until `seconds` have passed, after one warm-up round.
    func measure(_ name: String, perRound: Int, _ round: () -> Void) -> Measurement {
        round()
        let clock = ContinuousClock()
        let budget = Duration.nanoseconds(Int64(seconds * 1e9))
        let start = clock.now
        var operations = 0
        repeat {
            round()
            operations += perRound
        } while clock.now - start < budget
        return Measurement(name: name, operations: operations, elapsed: clock.now - start)
    }

    // MARK: The codec

    func codec() -> [Measurement] {
        let payload = [UInt8](repeating: 7, count: 64)
        let notify = Frame.notify(
            Frame.Notify(
                sequence: 42,
                time: 1_795_000_000_123_456_789,
                pid: 1234,
                uid: 1000,
                gid: 1000,
                name: "ev0042",
                payload: payload
            )
        )
        let post = Frame.post(Frame.Post(request: 0, name: "ev0042", payload: payload))
        var results: [Measurement] = []
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 8)
        defer { buffer.deallocate() }
        let batch = 1000

        results.append(
            measure("encode NOTIFY (64 B) into a buffer", perRound: batch) {
                for _ in 0..<batch { blackHole(notify.encode(to: buffer)) }
            }
        )
        let notifyBytes = notify.encoded()
        results.append(
            measure("queue a NOTIFY and write it out (the daemon's per-delivery path)", perRound: batch) {
                var queue = OutboundQueue(limit: 1 << 20)
                notifyBytes.withUnsafeBytes { frame in
                    for sequence in 1...UInt64(batch) { _ = queue.enqueueLive(frame, sequence: sequence) }
                }
                var total = 0
                queue.pendingChunks(maxChunks: 64) { total += $0.count }
                blackHole(queue.didWrite(total))
            }
        )
        results.append(
            measure("encode POST to [UInt8] (the library's post path)", perRound: batch) {
                for _ in 0..<batch { blackHole(post.encoded()) }
            }
        )
        let notifyStream = Array(repeating: notify.encoded(), count: batch).flatMap { $0 }
        results.append(
            measure("decode NOTIFY (client decoder, 1000 per append)", perRound: batch) {
                var decoder = FrameDecoder(role: .client)
                decoder.append(contentsOf: notifyStream)
                drain(&decoder)
            }
        )
        let postStream = Array(repeating: post.encoded(), count: batch).flatMap { $0 }
        results.append(
            measure("decode POST (daemon decoder, 1000 per append)", perRound: batch) {
                var decoder = FrameDecoder(role: .daemon)
                decoder.append(contentsOf: postStream)
                drain(&decoder)
            }
        )
        results.append(
            measure("read POST in place (heraldd's PostView path, 1000 per buffer)", perRound: batch) {
                postStream.withUnsafeBytes { stream in
                    let scanner = FrameScanner()
                    var offset = 0
                    do {
                        while let size = try scanner.frameSize(
                            atStartOf: UnsafeRawBufferPointer(rebasing: stream[offset...])
                        ),
                            size <= stream.count - offset
                        {
                            let frame = UnsafeRawBufferPointer(rebasing: stream[offset..<offset + size])
                            blackHole(
                                try FrameDecoder.withFrame(frame, role: .daemon, maxPayload: Limits.defaultMaxPayload) {
                                    next -> Int in
                                    guard case .post(let view) = next else { return 0 }
                                    return view.payload.count
                                }
                            )
                            offset += size
                        }
                    } catch {
                        fatalError("the microbenchmark's own frames failed to decode: \(error)")
                    }
                }
            }
        )
        return results
    }

    private func drain(_ decoder: inout FrameDecoder) {
        do {
            while let frame = try decoder.next() { blackHole(frame) }
        } catch {
            fatalError("the microbenchmark's own frames failed to decode: \(error)")
        }
    }

    // MARK: The matcher

    func matcher() -> [Measurement] {
        var results: [Measurement] = []
        let batch = 1000
        let name = "session.willResignActive"
        let cases: [(String, String)] = [
            ("exact", "session.willResignActive"),
            ("*", "session.*"),
            ("**", "session.**"),
            ("** (miss)", "chat.**"),
        ]
        for (label, text) in cases {
            let pattern = try! Pattern(text)
            results.append(
                measure("Pattern.matches, \(label) pattern `\(text)`", perRound: batch) {
                    for _ in 0..<batch { blackHole(pattern.matches(name)) }
                }
            )
        }

        // The named workload's index: 1000 names, 10 subscribers' worth of exact patterns each.
        var exactIndex = PatternIndex<ConnectionID>()
        for connection in 0..<100 {
            for k in 0..<10 {
                try! exactIndex.insert(Pattern(Workload.eventName(connection * 10 + k)), for: ConnectionID(connection))
            }
        }
        results.append(
            measure("PatternIndex, 1000 exact names, hit", perRound: batch) {
                for round in 0..<batch {
                    var found = 0
                    exactIndex.forEachMatch(of: Workload.eventNames[round % 1000]) { _ in found += 1 }
                    blackHole(found)
                }
            }
        )

        // heraldd's route lookup: the post's name bytes, a different name every time (the named workload), and the
        // same name every time (fan-out), where the last name's route is remembered.
        let nameBytes = Workload.eventNames.map { Array($0.utf8) }
        results.append(
            measure("PatternIndex.forEachMatch(ofName:), 1000 exact names", perRound: batch) {
                for round in 0..<batch {
                    var found = 0
                    nameBytes[round % 1000].withUnsafeBytes { exactIndex.forEachMatch(ofName: $0) { _ in found += 1 } }
                    blackHole(found)
                }
            }
        )
        results.append(
            measure("PatternIndex.matches(ofName:), 1000 exact names, a new name each time", perRound: batch) {
                // A local copy: a captured var would be boxed and checked for exclusive access at every call.
                var index = exactIndex
                for round in 0..<batch {
                    nameBytes[round % 1000].withUnsafeBytes { blackHole(index.matches(ofName: $0).count) }
                }
            }
        )
        results.append(
            measure("PatternIndex.matches(ofName:), the same name each time", perRound: batch) {
                var index = exactIndex
                for _ in 0..<batch {
                    nameBytes[7].withUnsafeBytes { blackHole(index.matches(ofName: $0).count) }
                }
            }
        )

        // Wildcards: 100 connections, each with `app<j>.*` and `app<j>.**`, plus one `**`.
        var wildIndex = PatternIndex<ConnectionID>()
        for connection in 0..<100 {
            try! wildIndex.insert(Pattern("app\(connection).*"), for: ConnectionID(connection))
            try! wildIndex.insert(Pattern("app\(connection).**"), for: ConnectionID(connection))
        }
        try! wildIndex.insert(Pattern("**"), for: ConnectionID(100))
        let wildNames = (0..<100).map { "app\($0).state" }
        results.append(
            measure("PatternIndex, 201 wildcard patterns (*, **), 3 matches", perRound: batch) {
                for round in 0..<batch {
                    var found = 0
                    wildIndex.forEachMatch(of: wildNames[round % 100]) { _ in found += 1 }
                    blackHole(found)
                }
            }
        )
        return results
    }

    /// The results as a markdown table.
    static func table(_ measurements: [Measurement]) -> String {
        var text = "| microbenchmark | ops/s | ns/op |\n|---|---|---|\n"
        for measurement in measurements {
            let nanoseconds = measurement.nanosecondsPerOperation
            text += String(format: "| %@ | %@ | %.1f |\n", measurement.name, rate(1e9 / nanoseconds), nanoseconds)
        }
        return text
    }

    private static func rate(_ value: Double) -> String {
        if value >= 1e6 { return String(format: "%.2fM", value / 1e6) }
        if value >= 1e3 { return String(format: "%.1fk", value / 1e3) }
        return String(format: "%.0f", value)
    }
}

extension Workload {
    /// `ev0000` ... `ev0999`, made once.
    static let eventNames = (0..<1000).map(eventName)
}

/// Keeps the optimiser from deleting a measured computation.
@inline(never)
func blackHole<T>(_ value: T) {
    withExtendedLifetime(value) {}
}
