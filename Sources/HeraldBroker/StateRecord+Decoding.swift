import HeraldWire

extension StateRecord {
    /// Why a log's bytes stop being records at some offset.
    public enum Damage: Error, Equatable, Sendable {
        /// The bytes end inside a record's header or body: a write cut short.
        case truncated
        /// A record's checksum does not match its body.
        case checksumMismatch
        /// The checksum matches but the body is not a record this version knows.
        case malformed
        /// A length beyond ``StateRecord/maxBodySize``, or zeros where a record should start.
        case badLength
    }

    /// Reads the record framed at the start of `bytes`.
    ///
    /// - Returns: The record and its framed size, or why there is none.
    public static func decode(_ bytes: UnsafeRawBufferPointer) -> Result<(StateRecord, Int), Damage> {
        guard bytes.count >= headerSize else { return .failure(.truncated) }
        let length = Int(bytes.loadUnaligned(fromByteOffset: 0, as: UInt32.self).littleEndian)
        let checksum = bytes.loadUnaligned(fromByteOffset: 4, as: UInt32.self).littleEndian
        guard length >= 2, length <= maxBodySize else { return .failure(.badLength) }
        guard bytes.count - headerSize >= length else { return .failure(.truncated) }
        let body = UnsafeRawBufferPointer(rebasing: bytes[headerSize..<(headerSize + length)])
        guard CRC32C.checksum(body) == checksum else { return .failure(.checksumMismatch) }
        var reader = BodyReader(bytes: body)
        guard let record = reader.record(), reader.offset == body.count else { return .failure(.malformed) }
        return .success((record, headerSize + length))
    }

    /// A cursor over one record's body; every read fails (nil) past the end.
    struct BodyReader {
        let bytes: UnsafeRawBufferPointer
        var offset = 0

        mutating func record() -> StateRecord? {
            guard let kindByte = byte(), let flags = byte(), let kind = Kind(rawValue: kindByte) else { return nil }
            switch kind {
            case .retained, .retainedWithOrigin:
                // Kind 1's flag bit 0: the first layout's origin string.
                let allowed: UInt8 = kind == .retained ? 1 : 0
                guard flags & ~allowed == 0, let sequence = integer(UInt64.self), let time = integer(UInt64.self),
                    let pid = integer(UInt32.self), let uid = integer(UInt32.self), let gid = integer(UInt32.self),
                    let name = string(), let payload = payload()
                else { return nil }
                var origin: Frame.Origin?
                if kind == .retainedWithOrigin {
                    guard let host = string(), let daemon = string(), let sequence = integer(UInt64.self) else {
                        return nil
                    }
                    origin = Frame.Origin(host: host, daemon: daemon, sequence: sequence)
                } else if flags & 1 == 1 {
                    // The first layout's origin string: the host, as far as the wire allows one (1 to 255 bytes).
                    guard let text = string() else { return nil }
                    origin = (1...255).contains(text.utf8.count) ? Frame.Origin(host: text) : nil
                }
                return .retained(
                    RetainedValue(
                        sequence: sequence,
                        time: time,
                        pid: Int32(bitPattern: pid),
                        uid: uid,
                        gid: gid,
                        name: name,
                        payload: payload,
                        origin: origin
                    )
                )
            case .cleared:
                guard flags == 0, let sequence = integer(UInt64.self), let name = string() else { return nil }
                return .cleared(name: name, sequence: sequence)
            case .willRegistered:
                guard flags & ~1 == 0, let id = integer(UInt64.self), let delay = integer(UInt32.self),
                    let pid = integer(UInt32.self), let uid = integer(UInt32.self), let gid = integer(UInt32.self),
                    let client = string(), let name = string(), let payload = payload()
                else { return nil }
                return .willRegistered(
                    WillRecord(
                        id: id,
                        delayMilliseconds: delay,
                        retain: flags & 1 == 1,
                        pid: Int32(bitPattern: pid),
                        uid: uid,
                        gid: gid,
                        client: client,
                        name: name,
                        payload: payload
                    )
                )
            case .willPending:
                guard flags == 0, let id = integer(UInt64.self), let due = integer(UInt64.self) else { return nil }
                return .willPending(id: id, due: due)
            case .willEnded:
                guard flags == 0, let id = integer(UInt64.self) else { return nil }
                return .willEnded(id: id)
            case .plugins:
                guard flags == 0, let count = integer(UInt32.self), Int(count) <= (bytes.count - offset) / 12 else {
                    return nil
                }
                var processes: [PluginProcess] = []
                processes.reserveCapacity(Int(count))
                for _ in 0..<count {
                    guard let process = process() else { return nil }
                    processes.append(process)
                }
                return .plugins(processes)
            case .pluginStarted:
                guard flags == 0, let process = process() else { return nil }
                return .pluginStarted(process)
            case .pluginEnded:
                guard flags == 0, let pid = integer(UInt32.self) else { return nil }
                return .pluginEnded(pid: Int32(bitPattern: pid))
            }
        }

        mutating func process() -> PluginProcess? {
            guard let pid = integer(UInt32.self), let start = integer(UInt64.self) else { return nil }
            return PluginProcess(pid: Int32(bitPattern: pid), startTime: start)
        }

        mutating func byte() -> UInt8? {
            guard offset < bytes.count else { return nil }
            defer { offset += 1 }
            return bytes[offset]
        }

        mutating func integer<T: FixedWidthInteger>(_: T.Type) -> T? {
            guard bytes.count - offset >= MemoryLayout<T>.size else { return nil }
            defer { offset += MemoryLayout<T>.size }
            return T(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: T.self))
        }

        mutating func raw(_ count: Int) -> [UInt8]? {
            guard bytes.count - offset >= count else { return nil }
            defer { offset += count }
            return Array(bytes[offset..<(offset + count)])
        }

        mutating func string() -> String? {
            guard let count = integer(UInt16.self), let raw = raw(Int(count)) else { return nil }
            return String(validating: raw, as: UTF8.self)
        }

        mutating func payload() -> [UInt8]? {
            guard let count = integer(UInt32.self) else { return nil }
            return raw(Int(count))
        }
    }
}
