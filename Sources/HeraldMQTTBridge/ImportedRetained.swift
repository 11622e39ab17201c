/// The retained values this bridge has stored in heraldd for other hosts, bounded in number and bytes
/// (`--max-imported-retained`, `--max-imported-retained-bytes`), so that other hosts cannot take this host's retained
/// store: past either bound an import goes on as a live post, delivered but not stored.
///
/// It counts what the bridge asked heraldd to store, not what heraldd holds: a local client that clears one of these
/// values frees its place here only when a clear comes through the bridge too. Erring that way keeps the bound.
struct ImportedRetained: Sendable {
    let maxCount: Int
    let maxBytes: Int
    /// Each held value's cost: its name's and payload's bytes, as heraldd charges them.
    private var held: [String: Int] = [:]
    private(set) var bytes = 0

    init(maxCount: Int, maxBytes: Int) {
        self.maxCount = maxCount
        self.maxBytes = maxBytes
    }

    /// Values held now.
    var count: Int { held.count }

    /// Whether a retained import of `payloadCount` bytes to `name` may be stored: always for a clear (an empty
    /// payload), which frees the name's place; for a value, when it fits both bounds in place of the name's current
    /// one. What is admitted is counted.
    mutating func admit(name: String, payloadCount: Int) -> Bool {
        let old = held[name] ?? 0
        guard payloadCount > 0 else {
            held[name] = nil
            bytes -= old
            return true
        }
        let cost = name.utf8.count + payloadCount
        guard held[name] != nil || held.count < maxCount, bytes - old + cost <= maxBytes else { return false }
        held[name] = cost
        bytes += cost - old
        return true
    }
}
