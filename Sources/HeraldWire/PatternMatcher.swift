/// A pattern prepared for matching names given as UTF-8 bytes.
///
/// ``Pattern/matches(_:)`` takes a `String`; a reader routing frames where they lie has only bytes, and making a
/// `String` per frame and subscription to ask costs more than the answer. The rules are the same (wire.md,
/// "Patterns"): an exact pattern is one comparison of bytes.
public struct PatternMatcher: Sendable {
    private enum Segment: Sendable {
        case literal([UInt8])
        case any
    }

    /// The pattern's bytes when it has no wildcard, so that it matches the one name they spell; empty otherwise (a
    /// pattern is never empty).
    @usableFromInline let exact: [UInt8]
    private let segments: [Segment]
    private let matchesTrailingSegments: Bool

    /// Prepares `pattern`.
    public init(_ pattern: Pattern) {
        self = pattern.matcher
    }

    /// Prepares a pattern from its parts, which `Pattern` has just parsed.
    init(text: String, segments: [Pattern.Segment], matchesTrailingSegments: Bool) {
        let isExact = !matchesTrailingSegments && !segments.contains(.any)
        self.exact = isExact ? Array(text.utf8) : []
        self.segments = segments.map { segment in
            switch segment {
            case .any: .any
            case .literal(let text): .literal(Array(text.utf8))
            }
        }
        self.matchesTrailingSegments = matchesTrailingSegments
    }

    /// Whether the name whose UTF-8 bytes are `name` matches. The name is assumed valid, as for
    /// ``Pattern/matches(_:)``, which this agrees with.
    ///
    /// Inlinable, with the comparison of an exact pattern in the caller: called across the module boundary on a
    /// matcher kept in an array, the caller retained and released both of its arrays around every call (perf,
    /// herald-bench named, a stream of 10 names: 7 % of the samples).
    @inlinable
    public func matches(_ name: UnsafeRawBufferPointer) -> Bool {
        if !exact.isEmpty {
            return exact.count == name.count && exact.withUnsafeBytes { own in Bytes.equal(own, name) }
        }
        return matchesSegments(name)
    }

    /// ``matches(_:)`` for a pattern with a wildcard, segment by segment.
    @usableFromInline
    func matchesSegments(_ name: UnsafeRawBufferPointer) -> Bool {
        var index = 0
        var start = 0
        while true {
            var end = start
            while end < name.count && name[end] != UInt8(ascii: ".") { end += 1 }
            let segment = UnsafeRawBufferPointer(rebasing: name[start..<end])
            if index == segments.count {
                // Out of pattern segments: only a trailing ** can absorb what is left, and it needs at least one
                // segment.
                return matchesTrailingSegments && !segment.isEmpty
            }
            switch segments[index] {
            case .any:
                if segment.isEmpty { return false }
            case .literal(let literal):
                guard literal.count == segment.count,
                    literal.withUnsafeBytes({ own in Bytes.equal(own, segment) })
                else { return false }
            }
            index += 1
            if end == name.count {
                return index == segments.count && !matchesTrailingSegments
            }
            start = end + 1
        }
    }
}
