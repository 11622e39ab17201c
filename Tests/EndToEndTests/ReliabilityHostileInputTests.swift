import Foundation
import HeraldPosix
import HeraldTestSupport
import HeraldWire
import Testing

/// Issue 3, point 3: random bytes and valid-then-invalid frame sequences at a live daemon while a healthy client
/// keeps posting and receiving.
struct ReliabilityHostileInputTests {
    /// xorshift64*, seeded and printed, so a failing run can be replayed.
    struct Generator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state ^= state >> 12
            state ^= state << 25
            state ^= state >> 27
            return state &* 2_685_821_657_736_338_717
        }
    }

    @Test func hostileConnectionsDoNotDisturbAHealthyClient() async throws {
        let daemon = try await TestDaemon.start(arguments: ["--log-level", "notice"])
        let seed = UInt64.random(in: 1...UInt64.max)
        let path = daemon.socketPath
        let failure = try await blocking { () -> String? in
            try Self.assault(path, seed: seed)
        }
        if let failure { Issue.record("\(failure)") }
        #expect(daemon.process.exitStatus == nil, "seed \(seed): heraldd died")
    }

    /// Runs the hostile connections against the daemon at `path`; returns a failure, or nil.
    private static func assault(_ path: String, seed: UInt64) throws -> String? {
        var random = Generator(state: seed)
        let healthy = try WireClient.ready(socketPath: path)
        try healthy.subscribe(1, "healthy.*")
        let valid: [Frame] = [
            .ping(.init(request: 1)),
            .post(.init(name: "hostile.ok", payload: [1, 2, 3])),
            .subscribe(.init(subscription: 5, pattern: try Pattern("hostile.**"))),
            .status(.init(request: 2)),
        ]
        for round in 0..<300 {
            let hostile = try WireClient(socketPath: path, receiveTimeout: 2)
            var bytes: [UInt8] = []
            if round % 2 == 0 {
                bytes = (0..<Int.random(in: 1...512, using: &random)).map { _ in
                    UInt8.random(in: 0...255, using: &random)
                }
            } else {
                bytes = Frame.hello(.init(client: "hostile")).encoded()
                for _ in 0..<Int.random(in: 0...4, using: &random) {
                    bytes += valid.randomElement(using: &random)!.encoded()
                }
                // Then something invalid: a bad length, an unknown type, a bad name, or plain noise.
                switch Int.random(in: 0...3, using: &random) {
                case 0: bytes += [0xFF, 0xFF, 0xFF, 0xFF, 0x02, 0]
                case 1: bytes += [2, 0, 0, 0, 0x55, 0]
                case 2: bytes += [9, 0, 0, 0, 0x02, 0, 0, 0, 0, 0, 3] + Array("a..".utf8)
                default: bytes += (0..<64).map { _ in UInt8.random(in: 0...255, using: &random) }
                }
            }
            try? hostile.sendBytes(bytes)
            // Whatever it got back, the healthy client carries on after every hostile connection.
            let sequence = try healthy.post("healthy.\(round)")
            guard case .notify(let notify)? = try healthy.receive() else {
                return "seed \(seed): the healthy client got nothing in round \(round)"
            }
            if notify.sequence != sequence {
                return "seed \(seed), round \(round): got \(notify.sequence), expected \(sequence)"
            }
        }
        return nil
    }
}
