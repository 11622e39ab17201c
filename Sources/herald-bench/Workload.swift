/// One workload of the peers' harness (shared/bench/peers/README.md, "The workload"), field for field.
///
/// Roles: `publishers` publishers (P), posting tasks spread over `publisherConnections` connections, and
/// `subscribers` subscriber connections (M). Names are
/// `ev0000` ... (`"ev%04u"`); subscriber connection j subscribes to the K names `(j*K + k) mod T`, and
/// publisher p sends its i-th message to `(i*P + p) mod T`.
struct Workload: Sendable {
    var name: String
    /// M: subscriber connections.
    var subscribers: Int
    /// P: publishers, each a posting task with its own share of the messages.
    var publishers = 1
    /// The connections the publishers share, publisher p on connection `p % publisherConnections`: 1 measures
    /// posts from several tasks coalescing on one connection, P one connection each (the harness's shape).
    var publisherConnections = 1
    /// T: names in play.
    var names = 1
    /// K: names each subscriber connection subscribes to.
    var namesPerSubscriber = 1
    /// Messages per second over all publishers; 0 sends as fast as the window allows.
    var rate: Double = 0
    /// N: messages in all, split over the publishers.
    var messages: Int
    /// Seconds of publishing; 0 stops on `messages` alone.
    var duration: Double
    /// Payload bytes, of which the first 24 are the header.
    var payload = 64
    /// W: messages in flight per subscriber connection before a publisher waits; 0 turns the window off.
    var window = 500

    /// The workload names `run.sh` runs, in its order.
    static let presetNames = ["fanout-1", "fanout-10", "fanout-100", "latency", "named"]

    /// The harness's table: 64-byte payload, P = 1, window 500, batch 1.
    ///
    /// - Parameters:
    ///   - name: one of ``presetNames``.
    ///   - duration: seconds per throughput run (`run.sh`'s `DURATION`); the latency run sends
    ///     10 000 messages per second of it.
    static func preset(_ name: String, duration: Double) -> Workload? {
        let unbounded = 1_000_000_000
        switch name {
        case "fanout-1": return Workload(name: name, subscribers: 1, messages: unbounded, duration: duration)
        case "fanout-10": return Workload(name: name, subscribers: 10, messages: unbounded, duration: duration)
        case "fanout-100": return Workload(name: name, subscribers: 100, messages: unbounded, duration: duration)
        case "latency":
            return Workload(
                name: name,
                subscribers: 10,
                rate: 10_000,
                messages: Int(10_000 * max(duration, 0.1)),
                duration: 0
            )
        case "named":
            return Workload(
                name: name,
                subscribers: 100,
                names: 1000,
                namesPerSubscriber: 10,
                messages: unbounded,
                duration: duration
            )
        default: return nil
        }
    }

    /// The k-th name of subscriber connection `connection`.
    func topic(ofConnection connection: Int, _ k: Int) -> Int {
        (connection * namesPerSubscriber + k) % names
    }

    /// Whether subscriber connection `connection` subscribed to `topic`.
    func connection(_ connection: Int, has topic: Int) -> Bool {
        ((topic - connection * namesPerSubscriber) % names + names) % names < namesPerSubscriber
    }

    /// The name publisher `publisher` sends its `index`-th message to.
    func topic(ofMessage index: UInt64, from publisher: Int) -> Int {
        Int((index &* UInt64(publishers) &+ UInt64(publisher)) % UInt64(names))
    }

    /// Subscriber connections per name.
    var fanout: [Int] {
        var counts = [Int](repeating: 0, count: names)
        for connection in 0..<subscribers {
            for k in 0..<namesPerSubscriber { counts[topic(ofConnection: connection, k)] += 1 }
        }
        return counts
    }

    /// `ev%04u`, the harness's name for `topic`.
    static func eventName(_ topic: Int) -> String {
        let digits = String(topic % 10_000)
        return "ev" + String(repeating: "0", count: 4 - digits.count) + digits
    }
}
