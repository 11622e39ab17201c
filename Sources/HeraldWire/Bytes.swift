/// Comparisons of raw bytes, shared by the readers that work on bytes where they lie (the daemon's name table
/// and route cache, the library's pattern matcher).
public enum Bytes {
    /// Whether `count` bytes at `a` and `b` are equal: 8 at a time, the last few with overlapping loads.
    @inlinable
    public static func equal(_ a: UnsafeRawPointer, _ b: UnsafeRawPointer, count: Int) -> Bool {
        if count >= 8 {
            var offset = 0
            while offset + 8 < count {
                if a.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                    != b.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                {
                    return false
                }
                offset += 8
            }
            return a.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self)
                == b.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self)
        }
        if count >= 4 {
            return a.loadUnaligned(as: UInt32.self) == b.loadUnaligned(as: UInt32.self)
                && a.loadUnaligned(fromByteOffset: count - 4, as: UInt32.self)
                    == b.loadUnaligned(fromByteOffset: count - 4, as: UInt32.self)
        }
        for offset in 0..<count
        where a.load(fromByteOffset: offset, as: UInt8.self) != b.load(fromByteOffset: offset, as: UInt8.self) {
            return false
        }
        return true
    }

    /// Whether two buffers hold the same bytes.
    @inlinable
    public static func equal(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
        a.count == b.count && (a.isEmpty || equal(a.baseAddress!, b.baseAddress!, count: a.count))
    }
}
