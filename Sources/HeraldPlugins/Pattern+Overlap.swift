public import HeraldWire

extension Pattern {
    /// Whether some name matches both this pattern and `other`: what decides that a subscription to `other` can
    /// receive a post from a plugin that provides `self`, and so activates it.
    ///
    /// Two patterns share a name exactly when, position by position up to the shorter one's fixed segments, their
    /// segments agree (a literal agrees with `*` and with an equal literal), and their lengths are compatible:
    /// without `**` a pattern matches names of exactly its segment count, with a final `**` names of at least one
    /// more. The shortest common name must also fit in a name's 255 bytes, which only very long literals break.
    public func overlaps(_ other: Pattern) -> Bool {
        let (a, b) = (segments, other.segments)
        let length: Int
        switch (matchesTrailingSegments, other.matchesTrailingSegments) {
        case (false, false):
            guard a.count == b.count else { return false }
            length = a.count
        case (true, false):
            guard b.count > a.count else { return false }
            length = b.count
        case (false, true):
            guard a.count > b.count else { return false }
            length = a.count
        case (true, true):
            length = max(a.count, b.count) + 1
        }
        // The shortest common name: at each position, the literal either side requires, else one byte.
        var bytes = length - 1
        for index in 0..<length {
            switch (index < a.count ? a[index] : .any, index < b.count ? b[index] : .any) {
            case (.literal(let x), .literal(let y)):
                guard x == y else { return false }
                bytes += x.utf8.count
            case (.literal(let text), .any), (.any, .literal(let text)):
                bytes += text.utf8.count
            case (.any, .any):
                bytes += 1
            }
        }
        return bytes <= Limits.maxNameBytes
    }
}
