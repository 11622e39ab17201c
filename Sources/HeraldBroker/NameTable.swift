import HeraldWire

/// A hash table from names to values, looked up by a name's bytes: the daemon finds a post's exact
/// subscribers straight from the bytes it read, without making a `String` or running `Hasher`
/// (SipHash) for each post, which were together ~450 instructions of every post in its profile.
///
/// Open addressing with linear probing and backward-shift deletion, so removals leave no tombstones;
/// the load stays at most 1/2. The hash is a multiplicative mix of the name's bytes, 8 at a time, from a
/// per-table random seed: names come from processes of the daemon's own user, so collisions an attacker
/// could force would only slow that user's own daemon, and the seed makes even that impractical.
struct NameTable<Value> {
    /// Each slot's hash, 0 for an empty slot (a name's hash is never 0), apart from names and values so a
    /// probe reads only integers.
    private var hashes: [UInt64] = []
    private var keys: [[UInt8]] = []
    private var values: [Value?] = []
    private(set) var count = 0
    private let seed: UInt64

    init(seed: UInt64 = UInt64.random(in: .min ... .max)) {
        self.seed = seed
    }

    var isEmpty: Bool { count == 0 }

    /// The value for the name whose UTF-8 bytes are `name`.
    func value(forName name: UnsafeRawBufferPointer) -> Value? {
        guard count > 0 else { return nil }
        let hash = Self.hash(name, seed: seed)
        let mask = hashes.count - 1
        var index = Int(truncatingIfNeeded: hash) & mask
        while hashes[index] != 0 {
            if hashes[index] == hash && Self.equal(keys[index], name) { return values[index] }
            index = (index + 1) & mask
        }
        return nil
    }

    /// The value for `name`.
    func value(for name: String) -> Value? {
        var name = name
        return name.withUTF8 { value(forName: UnsafeRawBufferPointer($0)) }
    }

    /// Changes the value for `name` in place, inserting `defaultValue` first if it is absent, and removes
    /// the entry when `body` returns false.
    mutating func update(_ name: String, default defaultValue: @autoclosure () -> Value, _ body: (inout Value) -> Bool)
    {
        let bytes = Array(name.utf8)
        let hash = bytes.withUnsafeBytes { Self.hash($0, seed: seed) }
        if let index = find(bytes, hash: hash) {
            if !body(&values[index]!) { remove(at: index) }
            return
        }
        var value = defaultValue()
        guard body(&value) else { return }
        if (count + 1) * 2 > hashes.count { grow() }
        insert(hash: hash, key: bytes, value: value)
    }

    /// The longest distance of a name from its home slot: how far a lookup may probe, for tests of the hash.
    var longestProbe: Int {
        let mask = hashes.count - 1
        return hashes.indices.filter { hashes[$0] != 0 }.map { ($0 - Int(truncatingIfNeeded: hashes[$0])) & mask }.max()
            ?? 0
    }

    /// Every name in the table, in no particular order.
    var names: [String] {
        hashes.indices.filter { hashes[$0] != 0 }.map { String(decoding: keys[$0], as: UTF8.self) }
    }

    private func find(_ name: [UInt8], hash: UInt64) -> Int? {
        guard count > 0 else { return nil }
        let mask = hashes.count - 1
        var index = Int(truncatingIfNeeded: hash) & mask
        while hashes[index] != 0 {
            if hashes[index] == hash && keys[index] == name { return index }
            index = (index + 1) & mask
        }
        return nil
    }

    private mutating func insert(hash: UInt64, key: [UInt8], value: Value) {
        let mask = hashes.count - 1
        var index = Int(truncatingIfNeeded: hash) & mask
        while hashes[index] != 0 { index = (index + 1) & mask }
        hashes[index] = hash
        keys[index] = key
        values[index] = value
        count += 1
    }

    /// Empties the slot at `index` and shifts later slots of its probe run back, so every remaining name
    /// stays reachable from its home slot without tombstones.
    private mutating func remove(at index: Int) {
        let mask = hashes.count - 1
        clear(index)
        count -= 1
        var hole = index
        var next = (index + 1) & mask
        while hashes[next] != 0 {
            let home = Int(truncatingIfNeeded: hashes[next]) & mask
            // The slot may move into the hole when the hole lies on its probe path from home.
            if (hole - home) & mask < (next - home) & mask {
                hashes[hole] = hashes[next]
                keys[hole] = keys[next]
                values[hole] = values[next]
                clear(next)
                hole = next
            }
            next = (next + 1) & mask
        }
        if count == 0 {
            hashes = []
            keys = []
            values = []
        }
    }

    private mutating func clear(_ index: Int) {
        hashes[index] = 0
        keys[index] = []
        values[index] = nil
    }

    private mutating func grow() {
        let (oldHashes, oldKeys, oldValues) = (hashes, keys, values)
        let capacity = Swift.max(16, oldHashes.count * 2)
        hashes = [UInt64](repeating: 0, count: capacity)
        keys = [[UInt8]](repeating: [], count: capacity)
        values = [Value?](repeating: nil, count: capacity)
        count = 0
        for index in oldHashes.indices where oldHashes[index] != 0 {
            insert(hash: oldHashes[index], key: oldKeys[index], value: oldValues[index]!)
        }
    }

    private static func equal(_ stored: [UInt8], _ name: UnsafeRawBufferPointer) -> Bool {
        stored.count == name.count
            && stored.withUnsafeBytes { Bytes.equal($0, name) }
    }

    /// Mixes the bytes 8 at a time (xor, multiply by an odd constant, fold the high half down); the last
    /// 1 to 8 bytes are read with at most two overlapping loads rather than byte by byte, then finalised.
    static func hash(_ bytes: UnsafeRawBufferPointer, seed: UInt64) -> UInt64 {
        let multiplier: UInt64 = 0x9E37_79B9_7F4A_7C15
        let count = bytes.count
        var hash = seed ^ (UInt64(count) &* multiplier)
        guard count > 0, let base = bytes.baseAddress else { return hash == 0 ? 1 : hash }
        var offset = 0
        while offset + 8 < count {
            hash =
                (hash ^ UInt64(littleEndian: base.loadUnaligned(fromByteOffset: offset, as: UInt64.self))) &* multiplier
            hash ^= hash >> 29
            offset += 8
        }
        let tail: UInt64
        if count >= 8 {
            // The last 8 bytes, overlapping bytes already mixed when the count is not a multiple of 8.
            tail = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self))
        } else if count >= 4 {
            let low = UInt64(UInt32(littleEndian: base.loadUnaligned(as: UInt32.self)))
            let high = UInt64(UInt32(littleEndian: base.loadUnaligned(fromByteOffset: count - 4, as: UInt32.self)))
            tail = low | high << 32
        } else {
            let first = UInt64(base.load(as: UInt8.self))
            let middle = UInt64(base.load(fromByteOffset: count / 2, as: UInt8.self))
            let last = UInt64(base.load(fromByteOffset: count - 1, as: UInt8.self))
            tail = first | middle << 8 | last << 16
        }
        hash ^= tail
        // MurmurHash3's 64-bit finaliser: it ends with a shift, so the low bits that pick a slot depend on
        // every input bit (a plain multiply left them depending on low bits only, and "ev0000"..."ev0999"
        // piled up in long probe runs).
        hash ^= hash >> 33
        hash = hash &* 0xFF51_AFD7_ED55_8CCD
        hash ^= hash >> 33
        hash = hash &* 0xC4CE_B9FE_1A85_EC53
        hash ^= hash >> 33
        return hash == 0 ? 1 : hash  // 0 marks an empty slot
    }
}
