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

    /// What one event appended for the owner, and how many frames it handled.
    struct Outcome {
        let id: ConnectionID
        let actions: [BrokerAction]
        var frames = 0

        /// Whether the event ended the connection: a ``BrokerAction/closeAfterFlush(_:)`` for it.
        var closesConnection: Bool { actions.contains(.closeAfterFlush(id)) }
        /// Whether the connection stays open after the event.
        var keepsConnection: Bool { !closesConnection }
        /// The `PLUGIN` requests handed over, in order.
        var pluginRequests: [Broker.PluginRequest] {
            actions.compactMap {
                if case .pluginRequest(let request) = $0 { return request }
                return nil
            }
        }
        /// The patterns reported subscribed, in order.
        var subscribed: [Pattern] {
            actions.compactMap {
                if case .subscribed(let pattern) = $0 { return pattern }
                return nil
            }
        }
        /// The connections the event asked to be written now.
        var writes: [ConnectionID] {
            actions.compactMap {
                if case .write(let id) = $0 { return id }
                return nil
            }
        }
    }

    /// Opens a connection as heraldd does when it accepts one.
    @discardableResult
    mutating func open(_ id: ConnectionID, sender: Sender = owner) -> Outcome {
        var actions: [BrokerAction] = []
        broker.connectionOpened(id, sender: sender, into: &actions)
        return Outcome(id: id, actions: actions)
    }

    /// Opens a connection and completes the handshake in `version` (1 unless a test says: the tests written for
    /// version 1 pin its behaviour), discarding the WELCOME.
    mutating func connect(_ raw: Int, sender: Sender = owner, version: UInt16 = 1) -> ConnectionID {
        let id = ConnectionID(raw)
        open(id, sender: sender)
        send(.hello(.init(minVersion: version, maxVersion: version, client: "test")), from: id)
        _ = output(of: id)
        return id
    }

    /// Hands the connection's `bytes` to the broker as one read, as heraldd does.
    @discardableResult
    mutating func read(_ bytes: [UInt8], from id: ConnectionID) -> Outcome {
        now += 1
        let time = now
        var actions: [BrokerAction] = []
        let frames = bytes.withUnsafeBytes { broker.bytesRead($0, on: id, now: time, into: &actions) }
        return Outcome(id: id, actions: actions, frames: frames)
    }

    /// Sends `frame` on the connection, encoded and read as one read.
    @discardableResult
    mutating func send(_ frame: Frame, from id: ConnectionID) -> Outcome {
        read(frame.encoded(), from: id)
    }

    /// The owner's `HELLO` timer for the connection fired.
    mutating func helloTimedOut(_ id: ConnectionID, afterMilliseconds milliseconds: Int) -> Outcome {
        var actions: [BrokerAction] = []
        broker.helloTimedOut(id, afterMilliseconds: milliseconds, into: &actions)
        return Outcome(id: id, actions: actions)
    }

    /// The owner accepted the connection while `limit` others awaited `HELLO`.
    mutating func tooManyIncompleteConnections(_ id: ConnectionID, limit: Int) -> Outcome {
        var actions: [BrokerAction] = []
        broker.tooManyIncompleteConnections(id, limit: limit, into: &actions)
        return Outcome(id: id, actions: actions)
    }

    /// The owner's supervisor answered a `PLUGIN` request.
    mutating func answer(_ request: Broker.PluginRequest, error: String?) -> Outcome {
        var actions: [BrokerAction] = []
        broker.answer(request, error: error, into: &actions)
        return Outcome(id: request.connection, actions: actions)
    }

    /// The owner is about to write the turn's output: the connections it is asked to write.
    mutating func turnEnding() -> [ConnectionID] {
        var actions: [BrokerAction] = []
        broker.turnEnding(into: &actions)
        return Outcome(id: ConnectionID(0), actions: actions).writes
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

    @discardableResult
    mutating func post(
        _ id: ConnectionID,
        _ name: String,
        _ payload: String = "",
        retain: Bool = false,
        request: UInt32 = 0
    ) -> Outcome {
        send(.post(.init(request: request, name: name, payload: Array(payload.utf8), retain: retain)), from: id)
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
        // Version 2 reads version 1's frames alike, and its own.
        decoder.version = 2
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
