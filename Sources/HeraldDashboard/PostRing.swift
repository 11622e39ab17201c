/// The last posts seen, at most a fixed number: the oldest goes when a new one comes.
///
/// Each post keeps at most ``maximumPayloadBytes`` of its payload, so the ring's memory is bounded by its capacity
/// whatever is posted.
public struct PostRing: Sendable {
    /// One post as the page lists it.
    public struct Post: Sendable, Equatable {
        /// The post's number since the dashboard started, from 1: the page asks for those after the last it has.
        public var index: UInt64
        /// The name posted to.
        public var name: String
        /// When heraldd stamped it, in nanoseconds since 1970.
        public var timeNanoseconds: UInt64
        /// The start of its payload.
        public var payload: [UInt8]
        /// Whether the payload was cut to ``PostRing/maximumPayloadBytes``.
        public var truncated: Bool
        /// Whether the post set (or cleared) the name's retained value.
        public var retained: Bool
    }

    /// The most payload bytes kept per post.
    public static let maximumPayloadBytes = 512

    /// The most posts kept.
    public let capacity: Int
    private var storage: [Post] = []
    /// Where the next post goes once the ring is full.
    private var next = 0
    /// The index of the newest post, 0 before the first.
    public private(set) var newestIndex: UInt64 = 0

    /// An empty ring of `capacity` posts.
    public init(capacity: Int) {
        precondition(capacity > 0, "a post ring needs room for one post")
        self.capacity = capacity
        storage.reserveCapacity(capacity)
    }

    /// Adds a post, dropping the oldest when full; the payload is cut to ``maximumPayloadBytes``.
    public mutating func append(name: String, timeNanoseconds: UInt64, payload: some Collection<UInt8>, retained: Bool)
    {
        newestIndex += 1
        let post = Post(
            index: newestIndex,
            name: name,
            timeNanoseconds: timeNanoseconds,
            payload: Array(payload.prefix(Self.maximumPayloadBytes)),
            truncated: payload.count > Self.maximumPayloadBytes,
            retained: retained
        )
        if storage.count < capacity {
            storage.append(post)
        } else {
            storage[next] = post
            next = (next + 1) % capacity
        }
    }

    /// The posts newer than `index`, oldest first, at most `limit` of them (the newest ones).
    public func posts(after index: UInt64, limit: Int = .max) -> [Post] {
        let all = storage.count < capacity ? storage : Array(storage[next...] + storage[..<next])
        let newer = all.filter { $0.index > index }
        return Array(newer.suffix(limit))
    }

    /// Every post kept, oldest first.
    public var all: [Post] { posts(after: 0) }

    /// How many posts are kept.
    public var count: Int { storage.count }
}
