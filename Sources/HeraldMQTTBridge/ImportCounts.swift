/// What became of every message the bridge received from the broker, counted so that the parts add up: each
/// received message is posted or not imported for exactly one reason. heraldd's refusals of posted messages are
/// counted by the library, by wire code (`Herald.refusedPostsByWireCode`), and are a part of `posted`.
struct ImportCounts: Sendable, Equatable {
    /// Messages handed to the import, presence included.
    var received: UInt64 = 0
    /// Posted to heraldd.
    var posted: UInt64 = 0
    /// Posted live although retained on the broker: past `--max-imported-retained` or its bytes. A part of `posted`.
    var retainedAsLive: UInt64 = 0
    /// This host's own messages, come back.
    var loops: UInt64 = 0
    /// A message already imported (the same origin, daemon and sequence), come again.
    var duplicates: UInt64 = 0
    /// Under the prefix but matching no `--import` pattern.
    var unmatched: UInt64 = 0
    /// A topic that is no Herald name (an empty level, too long, a character names cannot hold).
    var invalidName: UInt64 = 0
    /// A name under `herald.`, which only a daemon posts.
    var reservedName: UInt64 = 0
    /// A payload over heraldd's `maxPayload`.
    var payloadTooLarge: UInt64 = 0
    /// Not posted because the connection to heraldd failed.
    var failed: UInt64 = 0

    /// The messages not imported, by reason; with `posted`, they add up to `received`.
    var notImported: UInt64 { loops + duplicates + unmatched + invalidName + reservedName + payloadTooLarge + failed }
}
