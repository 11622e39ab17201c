/// A name the daemon knows, with its subscriber count (see ``Herald/names(withSubscriberCounts:)``).
public struct HeraldName: Sendable, Hashable {
    /// The name: one with a retained value or an exact subscription.
    public let name: String
    /// How many live subscriptions match the name, on every connection, monitors left out; nil when the counts
    /// were not asked for, or the daemon speaks only protocol version 1.
    public let subscribers: Int?

    /// Creates a name with its count.
    public init(name: String, subscribers: Int?) {
        self.name = name
        self.subscribers = subscribers
    }
}
