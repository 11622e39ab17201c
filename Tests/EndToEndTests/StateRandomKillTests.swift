import Foundation
import HeraldLaunch
import HeraldPosix
import HeraldTestSupport
import HeraldWire
import Synchronization
import Testing

/// Issue 31's random kills: writers post increasing numbers to 100 retained names while heraldd is SIGKILLed at
/// random moments and restarted on the same state file. After each restart every name holds its last acknowledged
/// value or a later one that was sent, and none goes backwards.
///
/// `HERALD_RANDOM_KILLS` sets the number of kills (the 1,000 takes several minutes); the suite runs 15.
struct StateRandomKillTests {
    static let names = (0..<100).map { "kill.n\($0)" }

    /// What the writers sent and what was acknowledged, per name.
    final class Ledger: Sendable {
        let sent = Mutex([Int](repeating: 0, count: 100))
        let acknowledged = Mutex([Int](repeating: 0, count: 100))
    }

    @Test func everyAcknowledgedValueSurvivesRandomKills() async throws {
        let kills = Int(ProcessInfo.processInfo.environment["HERALD_RANDOM_KILLS"] ?? "") ?? 15
        let directory = TemporaryDirectory()
        let ledger = Ledger()
        var seen = [Int](repeating: 0, count: 100)
        var generator = SystemRandomNumberGenerator()
        for round in 0...kills {
            let daemon = try await TestDaemon.start(directory: directory)
            // The state after the restart.
            let reader = try WireClient.ready(socketPath: daemon.socketPath)
            let sent = ledger.sent.withLock { $0 }
            let acknowledged = ledger.acknowledged.withLock { $0 }
            for (index, name) in Self.names.enumerated() {
                let value = try Self.get(name, from: reader, request: UInt32(index + 1))
                #expect(
                    value >= acknowledged[index],
                    "round \(round): \(name) lost acknowledged \(acknowledged[index])"
                )
                #expect(value <= sent[index], "round \(round): \(name) holds \(value), never posted")
                #expect(value >= seen[index], "round \(round): \(name) went back from \(seen[index]) to \(value)")
                seen[index] = value
            }
            if round == kills { break }
            // Two writers, fifty names each, until the kill.
            let writers = (0..<2).map { writer in
                Thread.detachNewThreadWithResult {
                    Self.write(names: writer * 50..<(writer + 1) * 50, to: daemon.socketPath, ledger: ledger)
                }
            }
            try await Task.sleep(for: .milliseconds(Int.random(in: 5...60, using: &generator)))
            try await daemon.stop(signal: SIGKILL)
            for writer in writers { await writer.value }
        }
        let total = ledger.acknowledged.withLock { $0.reduce(0, +) }
        #expect(total > kills, "the writers were acknowledged \(total) posts in \(kills) rounds")
    }

    /// The name's retained value as a number, 0 when it has none.
    static func get(_ name: String, from reader: WireClient, request: UInt32) throws -> Int {
        try reader.send(.get(.init(request: request, name: name)))
        var value = 0
        while let frame = try reader.receive() {
            switch frame {
            case .notify(let notify): value = Int(String(decoding: notify.payload, as: UTF8.self)) ?? -1
            case .ack(let ack) where ack.request == request: return value
            default: break
            }
        }
        throw TestFailure("the daemon closed the connection during GET \(name)")
    }

    /// Posts the next number to each name in turn, retained, each acknowledged before the next, until the
    /// connection fails.
    static func write(names: Range<Int>, to socketPath: String, ledger: Ledger) {
        guard let writer = try? WireClient.ready(socketPath: socketPath, client: "kill-writer") else { return }
        var index = names.lowerBound
        while true {
            let next = ledger.sent.withLock { sent in
                sent[index] += 1
                return sent[index]
            }
            do {
                try writer.post(Self.names[index], String(next), retain: true, request: 7)
            } catch {
                return
            }
            ledger.acknowledged.withLock { $0[index] = next }
            index = index + 1 == names.upperBound ? names.lowerBound : index + 1
        }
    }
}

extension Thread {
    /// Runs `body` on a thread of its own (the writers block in `read`), and hands its end to async code.
    static func detachNewThreadWithResult(_ body: @escaping @Sendable () -> Void) -> Task<Void, Never> {
        let (stream, continuation) = AsyncStream<Void>.makeStream()
        Thread.detachNewThread {
            body()
            continuation.finish()
        }
        return Task { for await _ in stream {} }
    }
}
