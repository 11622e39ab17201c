import HeraldBroker
import HeraldWire

/// Drives a `Broker` event by event and reads back what it queued for each connection, decoded, as a
/// client would see it. Writes "succeed" in full unless a test holds a connection back.
struct BrokerHarness {
    var broker: Broker
    var now: UInt64 = 1_000
    static let owner = Sender(pid: 100, uid: 1000, gid: 1000)

    init(
        queueBytes: Int = 1 << 20,
        maxSubscriptions: Int = 16,
        maxRetained: Int = 100,
        maxConnections: Int = 256,
        maxQueuedBytes: Int = 256 << 20,
        maxRetainedBytes: Int = 64 << 20,
        maxWills: Int = 1024,
        maxWillBytes: Int = 16 << 20,
        maxPatternCost: Int = Limits.defaultMaxPatternCost,
        maxNames: Int = Limits.defaultMaxNames
    ) {
        var configuration = Broker.Configuration(ownerUID: 1000, daemonPID: 42, server: "heraldd test", startTime: 5)
        configuration.bounds.queueBytes = queueBytes
        configuration.bounds.maxSubscriptions = maxSubscriptions
        configuration.bounds.maxRetained = maxRetained
        configuration.bounds.maxConnections = maxConnections
        configuration.bounds.maxQueuedBytes = maxQueuedBytes
        configuration.bounds.maxRetainedBytes = maxRetainedBytes
        configuration.bounds.maxWills = maxWills
        configuration.bounds.maxWillBytes = maxWillBytes
        configuration.bounds.maxPatternCost = maxPatternCost
        configuration.bounds.maxNames = maxNames
        broker = Broker(configuration: configuration)
    }

    /// Opens a connection and completes the handshake, discarding the WELCOME.
    mutating func connect(_ raw: Int, sender: Sender = owner) -> ConnectionID {
        let id = ConnectionID(raw)
        _ = broker.connectionOpened(id, sender: sender)
        _ = send(.hello(.init(client: "test")), from: id)
        _ = output(of: id)
        return id
    }

    @discardableResult
    mutating func send(_ frame: Frame, from id: ConnectionID) -> Broker.Action {
        now += 1
        return broker.frameReceived(frame, from: id, now: now)
    }

    mutating func subscribe(
        _ id: ConnectionID,
        _ subscription: UInt32,
        _ pattern: String,
        overflow: OverflowPolicy = .dropOldest
    ) {
        send(
            .subscribe(.init(subscription: subscription, pattern: try! Pattern(pattern), overflow: overflow)),
            from: id
        )
    }

    mutating func post(
        _ id: ConnectionID,
        _ name: String,
        _ payload: String = "",
        retain: Bool = false,
        request: UInt32 = 0
    ) {
        let frame = Frame.post(.init(request: request, name: name, payload: Array(payload.utf8), retain: retain))
        // Through the decoder's in-place path, as heraldd reads posts (`Broker.postReceived`).
        var decoder = FrameDecoder(role: .daemon, maxPayload: broker.configuration.bounds.maxPayload)
        decoder.append(contentsOf: frame.encoded())
        now += 1
        let time = now
        _ = try! broker.receiveNext(from: &decoder, on: id, now: time)
    }

    /// Writes everything queued for `id` and returns the bytes.
    mutating func outputBytes(of id: ConnectionID) -> [UInt8] {
        var bytes: [UInt8] = []
        while broker.hasOutput(id) {
            var chunk: [UInt8] = []
            broker.pendingOutput(for: id, maxChunks: 64) { chunk.append(contentsOf: $0) }
            broker.didWrite(chunk.count, to: id)
            bytes += chunk
        }
        return bytes
    }

    /// Writes everything queued for `id` and decodes it.
    mutating func output(of id: ConnectionID) -> [Frame] {
        let bytes = outputBytes(of: id)
        var decoder = FrameDecoder(role: .client)
        decoder.append(contentsOf: bytes)
        var frames: [Frame] = []
        while let frame = try! decoder.next() { frames.append(frame) }
        return frames
    }

    /// Names and retained flags of the NOTIFY frames in `frames`.
    static func notifications(_ frames: [Frame]) -> [String] {
        frames.compactMap {
            if case .notify(let notify) = $0 { return notify.retained ? "\(notify.name)(retained)" : notify.name }
            return nil
        }
    }
}
