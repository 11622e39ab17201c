import Foundation
import HeraldPosix
import HeraldTestSupport
import HeraldWire
import Testing

/// wire.md, "Refusals and fatal errors", against the real heraldd over raw sockets: every refusal a request can meet,
/// in version 1 (the `ERROR` is final, then end of file) and version 2 (the `ERROR` has `REFUSAL`, names its request,
/// and the connection then answers `PING`). The fatal codes, final in both versions, are pinned by WireContractTests
/// and, event by event for every code, by the broker's RefusalTests.
struct WireRefusalTests {
    /// The daemon's flags that make each refusal reachable with small requests.
    static let daemonArguments = [
        "--max-name-bytes", "16", "--max-payload", "1024", "--max-subscriptions", "2", "--max-pattern-cost", "3",
        "--max-retained", "1", "--max-retained-bytes", "64", "--max-wills", "0", "--max-names", "1",
    ]

    /// Sends what provokes `code`, answering request 5.
    static func provoke(_ code: WireError.Code, on client: WireClient) throws {
        switch code {
        case .invalidName:
            try client.send(.post(.init(request: 5, name: "a.name.over.sixteen", payload: [])))
        case .invalidPattern:
            try client.send(.subscribe(.init(subscription: 5, pattern: try Pattern("a.pattern.over.16"))))
        case .payloadTooLarge:
            try client.send(.post(.init(request: 5, name: "a", payload: Array(repeating: 1, count: 1025))))
        case .tooManySubscriptions:
            _ = try client.subscribe(1, "a")
            _ = try client.subscribe(2, "b")
            try client.send(.subscribe(.init(subscription: 5, pattern: try Pattern("c"))))
        case .duplicateSubscription:
            _ = try client.subscribe(5, "a")
            try client.send(.subscribe(.init(subscription: 5, pattern: try Pattern("b"))))
        case .unknownSubscription:
            try client.send(.unsubscribe(.init(subscription: 5)))
        case .reservedName:
            try client.send(.post(.init(request: 5, name: "herald.x", payload: [])))
        case .permissionDenied:
            try client.send(.monitor(.init(request: 4)))
            try client.send(.post(.init(request: 5, name: "a", payload: [])))
        case .tooManyRetained:
            _ = try client.post("a", "1", retain: true, request: 4)
            try client.send(.post(.init(request: 5, name: "b", payload: [2], retain: true)))
        case .tooManyRetainedBytes:
            try client.send(.post(.init(request: 5, name: "a", payload: Array(repeating: 1, count: 100), retain: true)))
        case .tooManyWills:
            try client.send(.will(.init(request: 5, delayMilliseconds: 0, name: "a", payload: [])))
        case .patternTooComplex:
            try client.send(.subscribe(.init(subscription: 5, pattern: try Pattern("a.b.c.*"))))
        case .tooManyNames:
            _ = try client.post("a", "1", retain: true, request: 4)
            _ = try client.subscribe(1, "b")
            try client.send(.names(.init(request: 5)))
        case .unknownPlugin:
            try client.send(.plugin(.init(request: 5, action: .start, name: "nope")))
        default:
            preconditionFailure("\(code) is not a refusal")
        }
    }

    @Test(arguments: WireError.Code.all.filter(\.isRefusal), [UInt16(1), 2])
    func aRefusalIsFinalInVersion1AndAnAnswerInVersion2(code: WireError.Code, version: UInt16) async throws {
        let daemon = try await TestDaemon.start(arguments: Self.daemonArguments + ["--no-plugins"])
        let path = daemon.socketPath
        try await blocking {
            let client = try WireClient.ready(socketPath: path, version: version)
            try Self.provoke(code, on: client)
            if version == 1 {
                #expect(try client.finalError() == Answer(code, 5))
                return
            }
            try client.send(.ping(.init(request: 77)))
            var frames: [Frame] = []
            while let frame = try client.receive() {
                frames.append(frame)
                if case .ack(let ack) = frame, ack.request == 77 { break }
            }
            let errors = frames.compactMap { frame -> WireError? in
                if case .error(let error) = frame { return error }
                return nil
            }
            #expect(errors.map(\.code) == [code])
            #expect(errors.first?.isRefusal == true && errors.first?.request == 5)
            #expect(frames.last.map { if case .ack = $0 { true } else { false } } == true, "PING answered after it")
        }
        try await daemon.stop()
    }
}
