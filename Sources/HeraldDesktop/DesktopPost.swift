public import HeraldDBus

/// One post a source decided to make: a Herald name, its JSON payload, and whether it is the name's retained value.
public struct DesktopPost: Hashable, Sendable, CustomStringConvertible {
    /// The Herald name (Protocols/names.md).
    public var name: String
    /// The payload; nil clears the name's retained value (a retained post with an empty payload).
    public var payload: [String: DBusJSON]?
    /// Whether the post also stores the payload as the retained value.
    public var retain: Bool

    /// A post of `payload` to `name`.
    public init(_ name: String, _ payload: [String: DBusJSON]?, retain: Bool) {
        self.name = name
        self.payload = payload
        self.retain = retain
    }

    public var description: String {
        "\(name)\(retain ? " (retained)" : "") \(payload.map { "\($0)" } ?? "cleared")"
    }
}

/// What a source decided after one event: the posts to make, in order, and the properties it refused.
public struct SourceUpdate: Hashable, Sendable {
    /// The posts, in the order they are to be made (a retained state before the notification about it).
    public var posts: [DesktopPost] = []
    /// Why a property was refused: its name, the type it must have and the type it had.
    public var refusals: [String] = []

    /// No post, no refusal.
    public init(posts: [DesktopPost] = [], refusals: [String] = []) {
        self.posts = posts
        self.refusals = refusals
    }

    /// This update followed by `other`.
    public mutating func append(_ other: SourceUpdate) {
        posts += other.posts
        refusals += other.refusals
    }
}
