/// heraldd's durable state as its log describes it: replaying a log's records, in order, rebuilds the retained
/// values, the wills held and the plugins' processes at the moment of the last record.
///
/// A log is ``header`` followed by ``StateRecord``s, then ``end`` when it was written through a mapping (heraldd's
/// way; the file goes on past it with reserved zeros). Replay stops at ``end`` or at the first byte that is not a
/// whole, valid record: what precedes it is the state (a write cut short by a kill loses only the record being
/// written, which had not been acknowledged), and ``Replay/damage`` says what was found there, for a log line.
public struct StateLog: Equatable, Sendable {
    /// The first bytes of every log: "HRLDSTAT", then the format's version, 1, as a u32.
    public static let header: [UInt8] = Array("HRLDSTAT".utf8) + [1, 0, 0, 0]

    /// What ends a log written through a shared mapping, whose file is longer than the log (the space reserved for
    /// later appends, zeros): a record's length of 0, which no record has, then "HEND". Replay stops there with no
    /// damage; zeros where a record should start, without it, are still damage (a write that did not happen).
    public static let end: [UInt8] = [0, 0, 0, 0] + Array("HEND".utf8)

    /// A will the log holds, and whether its connection had ended.
    public struct Will: Equatable, Sendable {
        public var record: StateRecord.WillRecord
        /// When it is due on CLOCK_MONOTONIC, once its connection ended without `BYE`; nil while the connection
        /// was open when the log ends.
        public var due: UInt64?
    }

    /// The current retained values, by name.
    public var retained: [String: StateRecord.RetainedValue] = [:]
    /// The wills held, by id.
    public var wills: [UInt64: Will] = [:]
    /// The processes heraldd must end if it is killed, by pid, with their start times.
    public var pluginProcesses: [Int32: UInt64] = [:]
    /// The highest post sequence number the log has seen.
    public var lastSequence: UInt64 = 0
    /// The highest will id the log has seen.
    public var lastWillID: UInt64 = 0

    public init() {}

    /// Applies one record.
    public mutating func apply(_ record: StateRecord) {
        switch record {
        case .retained(let value):
            retained[value.name] = value
            lastSequence = max(lastSequence, value.sequence)
        case .cleared(let name, let sequence):
            retained[name] = nil
            lastSequence = max(lastSequence, sequence)
        case .willRegistered(let will):
            wills[will.id] = Will(record: will, due: nil)
            lastWillID = max(lastWillID, will.id)
        case .willPending(let id, let due):
            wills[id]?.due = due
        case .willEnded(let id):
            wills[id] = nil
        case .plugins(let processes):
            pluginProcesses = [:]
            for process in processes { pluginProcesses[process.pid] = process.startTime }
        case .pluginStarted(let process):
            pluginProcesses[process.pid] = process.startTime
        case .pluginEnded(let pid):
            pluginProcesses[pid] = nil
        }
    }

    /// The records that rebuild this state from nothing: what a compacted log holds after its header.
    public var snapshot: [StateRecord] {
        var records = retained.values.sorted { $0.sequence < $1.sequence }.map(StateRecord.retained)
        for will in wills.values.sorted(by: { $0.record.id < $1.record.id }) {
            records.append(.willRegistered(will.record))
            if let due = will.due { records.append(.willPending(id: will.record.id, due: due)) }
        }
        if !pluginProcesses.isEmpty { records.append(.plugins(Self.processList(pluginProcesses))) }
        return records
    }

    /// The plugins' processes as one record's list, in pid order.
    public static func processList(_ processes: [Int32: UInt64]) -> [StateRecord.PluginProcess] {
        processes.sorted { $0.key < $1.key }.map { StateRecord.PluginProcess(pid: $0.key, startTime: $0.value) }
    }

    /// What reading a log found.
    public struct Replay: Equatable, Sendable {
        /// The state its valid records describe.
        public var state = StateLog()
        /// How many bytes, header included, are valid: where the next record belongs.
        public var validLength = 0
        /// How many records were applied.
        public var records = 0
        /// What stopped the replay before the end of the bytes, if anything did.
        public var damage: StateRecord.Damage?

        /// Nothing replayed: a new log.
        public init() {}
    }

    /// Why a log cannot be used at all.
    public enum Unusable: Error, Equatable, Sendable {
        /// It does not start with ``header`` (another file, or a newer format).
        case badHeader
    }

    /// Replays `bytes`, a whole log: an empty one is a new log.
    ///
    /// - Throws: ``Unusable`` when the bytes are not a log of this format.
    public static func replay(_ bytes: UnsafeRawBufferPointer) throws(Unusable) -> Replay {
        var replay = Replay()
        guard !bytes.isEmpty else { return replay }
        guard bytes.count >= header.count, bytes.prefix(header.count).elementsEqual(header) else {
            throw .badHeader
        }
        var offset = header.count
        while offset < bytes.count {
            switch StateRecord.decode(UnsafeRawBufferPointer(rebasing: bytes[offset...])) {
            case .success(let (record, size)):
                replay.state.apply(record)
                replay.records += 1
                offset += size
            case .failure(.badLength)
            where bytes.count - offset >= end.count && bytes[offset..<(offset + end.count)].elementsEqual(end):
                replay.validLength = offset
                return replay
            case .failure(let damage):
                replay.damage = damage
                replay.validLength = offset
                return replay
            }
        }
        replay.validLength = offset
        return replay
    }

    /// Replays `bytes` (see ``replay(_:)-(UnsafeRawBufferPointer)``).
    public static func replay(_ bytes: [UInt8]) throws(Unusable) -> Replay {
        let result = bytes.withUnsafeBytes { raw in Result { () throws(Unusable) in try replay(raw) } }
        return try result.get()
    }
}
