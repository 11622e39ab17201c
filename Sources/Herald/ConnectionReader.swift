import HeraldPosix
import HeraldWire

/// What the ``ReaderLoop`` keeps for one connection it reads: the receive buffer and the state of its blocked output.
///
/// Used by the loop's thread alone.
final class ConnectionReader {
    let connection: Connection
    /// The `data` word of the socket's epoll registration.
    let key: UInt64
    let scanner: FrameScanner
    /// Bytes read and not yet routed: at most the start of one frame between reads.
    var buffer = ReceiveBuffer()
    /// When blocked output makes the daemon count as not reading (monotonic nanoseconds); nil while output flows.
    var deadline: UInt64?
    /// Whether the socket is watched for room to write (`EPOLLOUT`), which it is only while output is blocked.
    var watchesOutput = false

    init(connection: Connection, key: UInt64) {
        self.connection = connection
        self.key = key
        self.scanner = FrameScanner(maxPayload: Int(connection.welcome.maxPayload))
    }
}

/// The loop's connections by epoll key and by connection, and those whose output is blocked.
struct ReaderTable {
    private var byKey: [UInt64: ConnectionReader] = [:]
    private var byConnection: [ObjectIdentifier: ConnectionReader] = [:]
    /// Keys of the readers with a deadline: few, so the loop never looks at every connection per turn.
    private var blocked: Set<UInt64> = []
    private var lastKey: UInt64 = 0

    var isEmpty: Bool { byKey.isEmpty }

    /// A key never used before; 0 is the eventfd's.
    mutating func nextKey() -> UInt64 {
        lastKey += 1
        return lastKey
    }

    subscript(key: UInt64) -> ConnectionReader? { byKey[key] }

    subscript(connection: Connection) -> ConnectionReader? { byConnection[ObjectIdentifier(connection)] }

    mutating func insert(_ reader: ConnectionReader) {
        byKey[reader.key] = reader
        byConnection[ObjectIdentifier(reader.connection)] = reader
    }

    mutating func remove(_ reader: ConnectionReader) {
        byKey[reader.key] = nil
        byConnection[ObjectIdentifier(reader.connection)] = nil
        blocked.remove(reader.key)
    }

    mutating func setDeadline(of reader: ConnectionReader, _ deadline: UInt64?) {
        reader.deadline = deadline
        if deadline == nil { blocked.remove(reader.key) } else { blocked.insert(reader.key) }
    }

    /// The longest the loop may wait before a blocked output's deadline, in milliseconds; -1 when none is blocked.
    func nextDeadlineMilliseconds(now: UInt64 = SystemClock.monotonicNanoseconds()) -> Int32 {
        var nearest: UInt64?
        for key in blocked {
            guard let deadline = byKey[key]?.deadline else { continue }
            nearest = min(nearest ?? deadline, deadline)
        }
        guard let nearest else { return -1 }
        guard nearest > now else { return 0 }
        // Rounded up, so the loop does not wake just before the deadline and spin.
        return Int32(clamping: (nearest - now + 999_999) / 1_000_000)
    }

    /// The readers whose output deadline has passed.
    func pastDeadline(_ now: UInt64) -> [ConnectionReader] {
        guard !blocked.isEmpty else { return [] }
        return blocked.compactMap { key in
            guard let reader = byKey[key], let deadline = reader.deadline, deadline <= now else { return nil }
            return reader
        }
    }
}
