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
    }

    /// Whether the pattern has no wildcard, so it matches exactly one name: its text.
    public var isExact: Bool {
        !matchesTrailingSegments && !segments.contains(.any)
    }

    /// Whether `name` matches. `name` is assumed valid; an invalid name matches nothing useful.
    public func matches(_ name: String) -> Bool {
        var index = 0
        var remaining = name.utf8[...]
        while true {
            let end = remaining.firstIndex(of: UInt8(ascii: ".")) ?? remaining.endIndex
            let segment = remaining[remaining.startIndex..<end]
            if index == segments.count {
                // Out of pattern segments: only a trailing ** can absorb what is left, and it needs
                // at least one segment.
                return matchesTrailingSegments && !segment.isEmpty
            }
            switch segments[index] {
            case .any:
                if segment.isEmpty { return false }
            case .literal(let literal):
                if !literal.utf8.elementsEqual(segment) { return false }
            }
            index += 1
            if end == remaining.endIndex {
                return index == segments.count && !matchesTrailingSegments
            }
            remaining = remaining[remaining.index(after: end)...]
        }
    }

    public var description: String { text }
}
