/// What makes an imported message the same as one seen before: its origin host, the origin daemon's pid and its
/// sequence there, as its user properties carry them.
///
/// The three strings as they are, not joined into one: building `"ORIGIN/DAEMON/SEQUENCE"` cost an interpolation
/// and often an allocation per imported message. Their hash is taken once, when the key is made: a key is hashed
/// twice in ``RecentSet`` (inserted, then removed once it is the oldest of 65,536), and probing compares it with
/// others; hashing the three strings each time was 4 to 5 % of the importing bridge's CPU (perf, Benchmarks/README.md).
struct ImportKey: Hashable, Sendable {
    let origin: String
    let daemon: String
    let sequence: String
    /// The three strings' hash, from Swift's per-process seeded `Hasher`.
    private let digest: Int

    init(origin: String, daemon: String, sequence: String) {
        self.origin = origin
        self.daemon = daemon
        self.sequence = sequence
        var hasher = Hasher()
        hasher.combine(origin)
        hasher.combine(daemon)
        hasher.combine(sequence)
        digest = hasher.finalize()
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(digest)
    }

    /// Equal keys have equal strings; the digest only rules the others out first.
    static func == (lhs: ImportKey, rhs: ImportKey) -> Bool {
        lhs.digest == rhs.digest && lhs.sequence == rhs.sequence && lhs.daemon == rhs.daemon
            && lhs.origin == rhs.origin
    }
}
