public import HeraldWire

/// One record of heraldd's durable state log: what changed in the retained values, the wills or the plugins'
/// processes. The log (``StateLog``) is a file header followed by records, each framed as
///
///     u32 length of the body, little-endian
///     u32 CRC-32C of the body, little-endian
///     body: u8 kind, u8 flags, then the kind's fields
///
/// Integers are little-endian; a string is a u16 byte count and its UTF-8 bytes; a payload is a u32 count and its
/// bytes. Bit 0 of a will's flags says it is retained. Unknown flag bits are refused: a record is read whole or not
/// at all.
///
/// A retained value with an origin (wire version 2's `ORIGIN`: host, daemon, sequence there) is kind 7, the fields
/// of kind 1 followed by the host and the daemon as strings and the sequence as a u64; one without keeps kind 1, the
/// layout of the first logs, so an older heraldd still reads a log that holds no origin. The first logs' kind 1
/// reserved flag bit 0 for an origin string after the payload; no heraldd wrote one, and one is read as the host.
public enum StateRecord: Equatable, Sendable {
    /// A retained value, as the broker keeps it.
    case retained(RetainedValue)
    /// The name's retained value was cleared.
    case cleared(name: String, sequence: UInt64)
    /// A connection registered a will (or replaced its will: the id is new each time).
    case willRegistered(WillRecord)
    /// The will's connection ended without `BYE`: the will is due at `due`, on the system's monotonic clock
    /// (CLOCK_MONOTONIC, the same for every process of one boot, so a restarted heraldd reads it as written).
    case willPending(id: UInt64, due: UInt64)
    /// The will was withdrawn, replaced, discarded or posted: it is gone.
    case willEnded(id: UInt64)
    /// The processes heraldd must end if it is killed (its plugins' and what they left), each with its start time
    /// (Daemon+Descendants): the whole set, replacing what earlier records said. Written by a compaction, and
    /// empty once a new heraldd has ended what its predecessor left.
    case plugins([PluginProcess])
    /// A process joined the plugins' set.
    case pluginStarted(PluginProcess)
    /// The process with this pid left the plugins' set: it is gone, and its pid may be reused.
    case pluginEnded(pid: Int32)

    /// A process heraldd's plugins run: its pid, and its start time in clock ticks since boot (as
    /// `/proc/PID/stat` gives it), which tells it from a later process given the same pid.
    public struct PluginProcess: Hashable, Sendable {
        public var pid: Int32
        public var startTime: UInt64

        public init(pid: Int32, startTime: UInt64) {
            self.pid = pid
            self.startTime = startTime
        }
    }

    /// A retained value: the post that set it.
    public struct RetainedValue: Equatable, Sendable {
        public var sequence: UInt64
        public var time: UInt64
        public var pid: Int32
        public var uid: UInt32
        public var gid: UInt32
        public var name: String
        public var payload: [UInt8]
        /// Where the post was first made, when its `POST` said (wire version 2's `ORIGIN`).
        public var origin: Frame.Origin?

        public init(
            sequence: UInt64,
            time: UInt64,
            pid: Int32,
            uid: UInt32,
            gid: UInt32,
            name: String,
            payload: [UInt8],
            origin: Frame.Origin? = nil
        ) {
            self.sequence = sequence
            self.time = time
            self.pid = pid
            self.uid = uid
            self.gid = gid
            self.name = name
            self.payload = payload
            self.origin = origin
        }
    }

    /// A will and what a restarted heraldd needs to post it, or to know that its client came back.
    public struct WillRecord: Equatable, Sendable {
        public var id: UInt64
        public var delayMilliseconds: UInt32
        public var retain: Bool
        public var pid: Int32
        public var uid: UInt32
        public var gid: UInt32
        /// The client's `HELLO` label: with the uid and the will's name, how a reconnecting client is recognised.
        public var client: String
        public var name: String
        public var payload: [UInt8]

        public init(
            id: UInt64,
            delayMilliseconds: UInt32,
            retain: Bool,
            pid: Int32,
            uid: UInt32,
            gid: UInt32,
            client: String,
            name: String,
            payload: [UInt8]
        ) {
            self.id = id
            self.delayMilliseconds = delayMilliseconds
            self.retain = retain
            self.pid = pid
            self.uid = uid
            self.gid = gid
            self.client = client
            self.name = name
            self.payload = payload
        }
    }

    enum Kind: UInt8 {
        case retained = 1
        case cleared = 2
        case willRegistered = 3
        case willPending = 4
        case willEnded = 5
        case plugins = 6
        case retainedWithOrigin = 7
        case pluginStarted = 8
        case pluginEnded = 9
    }

    /// The bytes before a record's body: its length and checksum.
    public static let headerSize = 8
    /// The longest body a record may have: a retained value or will at the protocol's largest payload, with room.
    public static let maxBodySize = 32 << 20
}

extension StateRecord {
    /// Appends the record, framed, to `out`.
    public func encode(into out: inout [UInt8]) {
        let start = out.count
        if case .retained = self {} else { Self.put(UInt64(0), &out) }  // the length and checksum, set below
        switch self {
        case .retained(let value):
            // Every retained post's path: the header and the fixed fields in one copy, then the name and payload.
            var name = value.name
            let nameCount = name.utf8.count
            precondition(nameCount <= Int(UInt16.max), "a state log string is at most 65535 bytes")
            withUnsafeTemporaryAllocation(byteCount: 40, alignment: 8) { fixed in
                fixed.storeBytes(of: 0, toByteOffset: 0, as: UInt64.self)  // the length and checksum, set below
                fixed[8] = value.origin == nil ? Kind.retained.rawValue : Kind.retainedWithOrigin.rawValue
                fixed[9] = 0
                fixed.storeBytes(of: value.sequence.littleEndian, toByteOffset: 10, as: UInt64.self)
                fixed.storeBytes(of: value.time.littleEndian, toByteOffset: 18, as: UInt64.self)
                fixed.storeBytes(of: value.pid.littleEndian, toByteOffset: 26, as: Int32.self)
                fixed.storeBytes(of: value.uid.littleEndian, toByteOffset: 30, as: UInt32.self)
                fixed.storeBytes(of: value.gid.littleEndian, toByteOffset: 34, as: UInt32.self)
                fixed.storeBytes(of: UInt16(nameCount).littleEndian, toByteOffset: 38, as: UInt16.self)
                out.append(contentsOf: fixed.assumingMemoryBound(to: UInt8.self))
            }
            name.withUTF8 { out.append(contentsOf: $0) }
            Self.putBytes(value.payload, &out)
            if let origin = value.origin {
                Self.putString(origin.host, &out)
                Self.putString(origin.daemon, &out)
                Self.put(origin.sequence, &out)
            }
        case .cleared(let name, let sequence):
            out.append(Kind.cleared.rawValue)
            out.append(0)
            Self.put(sequence, &out)
            Self.putString(name, &out)
        case .willRegistered(let will):
            out.append(Kind.willRegistered.rawValue)
            out.append(will.retain ? 1 : 0)
            Self.put(will.id, &out)
            Self.put(will.delayMilliseconds, &out)
            Self.put(UInt32(bitPattern: will.pid), &out)
            Self.put(will.uid, &out)
            Self.put(will.gid, &out)
            Self.putString(will.client, &out)
            Self.putString(will.name, &out)
            Self.putBytes(will.payload, &out)
        case .willPending(let id, let due):
            out.append(Kind.willPending.rawValue)
            out.append(0)
            Self.put(id, &out)
            Self.put(due, &out)
        case .willEnded(let id):
            out.append(Kind.willEnded.rawValue)
            out.append(0)
            Self.put(id, &out)
        case .plugins(let processes):
            out.append(Kind.plugins.rawValue)
            out.append(0)
            Self.put(UInt32(processes.count), &out)
            for process in processes { Self.putProcess(process, &out) }
        case .pluginStarted(let process):
            out.append(Kind.pluginStarted.rawValue)
            out.append(0)
            Self.putProcess(process, &out)
        case .pluginEnded(let pid):
            out.append(Kind.pluginEnded.rawValue)
            out.append(0)
            Self.put(UInt32(bitPattern: pid), &out)
        }
        let bodyCount = UInt32(out.count - start - Self.headerSize)
        out.withUnsafeMutableBytes { raw in
            let checksum = CRC32C.checksum(UnsafeRawBufferPointer(rebasing: raw[(start + Self.headerSize)...]))
            raw.storeBytes(of: bodyCount.littleEndian, toByteOffset: start, as: UInt32.self)
            raw.storeBytes(of: checksum.littleEndian, toByteOffset: start + 4, as: UInt32.self)
        }
    }

    /// The record's bytes, framed.
    public var encoded: [UInt8] {
        var out: [UInt8] = []
        encode(into: &out)
        return out
    }

    // Typed buffers: appending an UnsafeRawBufferPointer goes a byte at a time, a typed one is one copy (callgrind:
    // a retained post's record took 2,534 instructions with the former).
    @inline(__always)
    static func put<T: FixedWidthInteger>(_ value: T, _ out: inout [UInt8]) {
        var value = value.littleEndian
        withUnsafeBytes(of: &value) { raw in
            let start = raw.baseAddress!.assumingMemoryBound(to: UInt8.self)
            out.append(contentsOf: UnsafeBufferPointer(start: start, count: raw.count))
        }
    }

    static func putString(_ text: String, _ out: inout [UInt8]) {
        var text = text
        let count = text.utf8.count
        precondition(count <= Int(UInt16.max), "a state log string is at most 65535 bytes")
        put(UInt16(count), &out)
        text.withUTF8 { out.append(contentsOf: $0) }
    }

    static func putBytes(_ bytes: [UInt8], _ out: inout [UInt8]) {
        put(UInt32(bytes.count), &out)
        out.append(contentsOf: bytes)
    }

    static func putProcess(_ process: PluginProcess, _ out: inout [UInt8]) {
        put(UInt32(bitPattern: process.pid), &out)
        put(process.startTime, &out)
    }

    /// The bytes a retained value's record takes, framed: what a compacted log spends on it.
    public static func retainedSize(nameCount: Int, payloadCount: Int, origin: Frame.Origin?) -> Int {
        let originCount = origin.map { 2 + $0.host.utf8.count + 2 + $0.daemon.utf8.count + 8 } ?? 0
        return headerSize + retainedFixedSize + nameCount + payloadCount + originCount
    }

    /// A retained value's record besides its name, payload and origin: kind, flags, sequence, time, pid, uid, gid,
    /// and the counts of the name and the payload.
    public static let retainedFixedSize = 2 + 8 + 8 + 4 + 4 + 4 + 2 + 4
}
