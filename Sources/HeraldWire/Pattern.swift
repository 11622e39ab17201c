/// A subscription pattern (wire.md, "Patterns"): segments that match themselves, `*` for exactly
/// one segment, and a final `**` for one or more trailing segments.
public struct Pattern: Hashable, Sendable, CustomStringConvertible {
    /// One segment of a pattern.
    public enum Segment: Hashable, Sendable {
        /// Matches a segment equal to this text.
        case literal(String)
        /// `*`: matches any one segment.
        case any
    }

    /// The pattern as written.
    public let text: String
    /// The segments before a trailing `**`, or all of them.
    public let segments: [Segment]
    /// Whether the pattern ends in `**`.
    public let matchesTrailingSegments: Bool
    /// The pattern prepared for names as bytes: the one implementation of matching.
    let matcher: PatternMatcher

    /// Parses and validates a pattern.
    ///
    /// - Throws: `WireError` with code `INVALID_PATTERN`, saying what is wrong.
    public init(_ text: String, request: UInt32 = 0) throws(WireError) {
        if let problem = Name.problem(in: text, allowWildcards: true) {
            throw WireError(.invalidPattern, "invalid pattern \(Name.quoted(text)): \(problem)", request: request)
        }
        var segments: [Segment] = []
        var trailing = false
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        for (index, part) in parts.enumerated() {
            if part == "**" {
                guard index == parts.count - 1 else {
                    throw WireError(
                        .invalidPattern,
                        "invalid pattern \(Name.quoted(text)): '**' is allowed only as the last segment",
                        request: request
                    )
                }
                trailing = true
            } else if part == "*" {
                segments.append(.any)
            } else if part.contains("*") {
                throw WireError(
                    .invalidPattern,
                    "invalid pattern \(Name.quoted(text)): '*' must be a whole segment, not part of \(Name.quoted(String(part)))",
                    request: request
                )
            } else {
                segments.append(.literal(String(part)))
            }
        }
        self.text = text
        self.segments = segments
        self.matchesTrailingSegments = trailing
        self.matcher = PatternMatcher(text: text, segments: segments, matchesTrailingSegments: trailing)
    }

    // The segments and the matcher follow from the text.
    public static func == (a: Pattern, b: Pattern) -> Bool { a.text == b.text }

    public func hash(into hasher: inout Hasher) { hasher.combine(text) }

    /// Whether the pattern has no wildcard, so it matches exactly one name: its text.
    public var isExact: Bool {
        !matchesTrailingSegments && !segments.contains(.any)
    }

    /// What the pattern costs the daemon to match, charged to its connection against `--max-pattern-cost`
    /// (wire.md, "Patterns"): 0 for an exact pattern, which is one lookup by name; else its segments, `**`
    /// included, which bound both its memory and the matching work it adds to a post (a lookup for its shape and
    /// a step per `*`).
    public var cost: Int {
        isExact ? 0 : segments.count + (matchesTrailingSegments ? 1 : 0)
    }

    /// Whether `name` matches. `name` is assumed valid; an invalid name matches nothing useful.
    public func matches(_ name: String) -> Bool {
        var name = name
        return name.withUTF8 { matcher.matches(UnsafeRawBufferPointer($0)) }
    }

    public var description: String { text }
}
