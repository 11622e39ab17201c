/// The name grammar of wire.md: 1 to 255 bytes of UTF-8, segments separated by `.`, no space,
/// control characters or `*`.
public enum Name {
    /// The first segment reserved for notices the library synthesises (`herald.dropped`).
    public static let reservedPrefix = "herald"

    /// Checks that `name` is a valid name.
    ///
    /// - Throws: `WireError` with code `INVALID_NAME` and a reason that says what is wrong and where.
    public static func validate(_ name: String, request: UInt32 = 0) throws(WireError) {
        if let problem = problem(in: name, allowWildcards: false) {
            throw WireError(.invalidName, "invalid name \(quoted(name)): \(problem)", request: request)
        }
    }

    /// Whether `name` is valid; the same rule as `validate(_:)`.
    public static func isValid(_ name: String) -> Bool {
        problem(in: name, allowWildcards: false) == nil
    }

    /// Whether `name` lies in the reserved `herald.` namespace.
    public static func isReserved(_ name: String) -> Bool {
        // An iterator rather than `starts(with:)`, whose generic path costs the daemon ~140 instructions a post.
        var bytes = name.utf8.makeIterator()
        for expected in reservedPrefix.utf8 where bytes.next() != expected {
            return false
        }
        let next = bytes.next()
        return next == nil || next == UInt8(ascii: ".")
    }

    /// Decodes and validates a name from raw bytes off the wire.
    ///
    /// - Throws: `INVALID_NAME` when the bytes are not UTF-8 or not a name.
    public static func decode(_ bytes: some Collection<UInt8>, request: UInt32 = 0) throws(WireError) -> String {
        if let text = bytes.withContiguousStorageIfAvailable(plainASCIIName) ?? nil {
            return text
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw WireError(.invalidName, "invalid name: not UTF-8", request: request)
        }
        try validate(text, request: request)
        return text
    }

    /// The common case: a name of ASCII bytes that breaks no rule, checked byte by byte and made a `String`
    /// without `String(validating:)`, whose generic path costs the daemon ~1,000 instructions a post. Anything
    /// else returns nil and takes the full path, which also words the error.
    private static func plainASCIIName(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
        guard isPlainASCIIName(UnsafeRawBufferPointer(bytes)) else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Whether `bytes` are a valid name of printable ASCII: the check `decode` makes before its slower
    /// general path, and the daemon's per-post check. Eight bytes at a time: the byte loop was ~100
    /// instructions of every post.
    public static func isPlainASCIIName(_ bytes: UnsafeRawBufferPointer) -> Bool {
        let count = bytes.count
        guard count > 0, count <= Limits.maxNameBytes, let base = bytes.baseAddress else { return false }
        let dot = UInt8(ascii: ".")
        // A segment is empty at either end, or between two dots.
        guard base.load(as: UInt8.self) != dot, base.load(fromByteOffset: count - 1, as: UInt8.self) != dot else {
            return false
        }
        if count < 8 { return isPlainASCIIWord(paddedWord(base, count: count)) }
        // Words 7 bytes apart overlap by one byte, and the last ends at the end, overlapping the one before:
        // every pair of neighbouring bytes lies inside some word, so ".." is always seen.
        var start = 0
        while start + 8 < count {
            guard isPlainASCIIWord(UInt64(littleEndian: base.loadUnaligned(fromByteOffset: start, as: UInt64.self)))
            else { return false }
            start += 7
        }
        return isPlainASCIIWord(UInt64(littleEndian: base.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self)))
    }

    /// The `count` (1 to 7) bytes at `base` as the low bytes of a word, byte 0 lowest, padded with a plain letter,
    /// which breaks no rule and is never a dot.
    ///
    /// Two overlapping loads whose shared bytes are equal, OR-ed together: copying the bytes into a padded word on
    /// the stack (`copyMemory`, a `memcpy` call) and loading it back stalled on the store, and was 60 % of this check's
    /// samples for the short names most posts carry (perf, herald-bench fan-out 100).
    @inline(__always)
    private static func paddedWord(_ base: UnsafeRawPointer, count: Int) -> UInt64 {
        let word: UInt64
        if count >= 4 {
            let low = UInt64(UInt32(littleEndian: base.loadUnaligned(as: UInt32.self)))
            let high = UInt64(UInt32(littleEndian: base.loadUnaligned(fromByteOffset: count - 4, as: UInt32.self)))
            word = low | high << UInt64(8 * (count - 4))
        } else if count >= 2 {
            let low = UInt64(UInt16(littleEndian: base.loadUnaligned(as: UInt16.self)))
            let high = UInt64(UInt16(littleEndian: base.loadUnaligned(fromByteOffset: count - 2, as: UInt16.self)))
            word = low | high << UInt64(8 * (count - 2))
        } else {
            word = UInt64(base.load(as: UInt8.self))
        }
        let filled: UInt64 = (1 << UInt64(8 * count)) - 1
        return word | (0x6161_6161_6161_6161 & ~filled)
    }

    /// Whether 8 bytes are all printable ASCII other than `*`, with no two dots side by side.
    @inline(__always)
    private static func isPlainASCIIWord(_ word: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        let lows: UInt64 = 0x7F7F_7F7F_7F7F_7F7F
        // A byte under 0x21 (space and control characters): the classic "has less than" test.
        let under = (word &- ones &* 0x21) & ~word & highs
        // A byte over 0x7E: adding 1 reaches 0x80, or the high bit is already set.
        let over = ((word & lows) &+ ones | word) & highs
        // Bytes equal to '*' and to '.', exactly (no borrow between bytes).
        func equal(_ byte: UInt64) -> UInt64 {
            let x = word ^ (ones &* byte)
            return ~(((x & lows) &+ lows) | x | lows)
        }
        let dots = equal(0x2E)
        return under | over | equal(0x2A) | (dots & (dots << 8)) == 0
    }

    /// Describes what is wrong with `text` as a name (or, with `allowWildcards`, as the segments of
    /// a pattern before wildcard rules are applied), or returns nil when nothing is.
    static func problem(in text: String, allowWildcards: Bool) -> String? {
        let count = text.utf8.count
        if count == 0 { return "it is empty" }
        if count > Limits.maxNameBytes { return "it is \(count) bytes, the limit is \(Limits.maxNameBytes)" }
        var offset = 0
        var segmentLength = 0
        for scalar in text.unicodeScalars {
            let value = scalar.value
            if scalar == "." {
                if segmentLength == 0 { return "empty segment at byte \(offset)" }
                segmentLength = 0
            } else if value <= 0x20 || (0x7F...0x9F).contains(value) {
                let what = value == 0x20 ? "a space" : "control character U+\(hex4(value))"
                return "\(what) at byte \(offset)"
            } else if scalar == "*" && !allowWildcards {
                return "'*' at byte \(offset) (wildcards belong in patterns, not names)"
            } else {
                segmentLength += 1
            }
            offset += UTF8.width(scalar)
        }
        if segmentLength == 0 { return "empty segment at byte \(offset)" }
        return nil
    }

    static func quoted(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            if scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) {
                out += "\\u{\(String(scalar.value, radix: 16))}"
            } else if scalar == "\"" || scalar == "\\" {
                out += "\\\(scalar)"
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    private static func hex4(_ value: UInt32) -> String {
        let digits = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }
}
