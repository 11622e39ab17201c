extension Frame {
    /// The number of bytes `encode(to:)` writes: header and body.
    public var encodedSize: Int {
        frameHeaderSize + bodySize
    }

    private var bodySize: Int {
        switch self {
        case .hello(let hello): 4 + 1 + hello.client.utf8.count
        case .post(let post): 4 + 1 + post.name.utf8.count + (post.origin?.encodedSize ?? 0) + post.payload.count
        case .subscribe(let subscribe): 4 + 1 + subscribe.pattern.text.utf8.count
        case .unsubscribe, .ping, .status: 4
        case .get(let get): 4 + 1 + get.name.utf8.count
        case .bye: 0
        case .will(let will): 8 + 1 + will.name.utf8.count + will.payload.count
        case .monitor, .names: 4
        case .plugin(let plugin): 4 + 1 + 1 + plugin.name.utf8.count
        case .welcome(let welcome): 12 + 1 + welcome.server.utf8.count
        case .notify(let notify):
            Frame.Notify.fixedBodySize + notify.name.utf8.count + (notify.origin?.encodedSize ?? 0)
                + notify.payload.count
        case .ack: 12
        case .dropped: 24
        case .error(let error): 6 + Frame.truncatedReason(error.reason).utf8.count
        case .statusReport: 4 + 4 + 8 + 4 + 4 + 4 + 8 + 8 + 8
        case .namesReport(let report):
            4 + report.names.reduce(0) { $0 + 1 + $1.utf8.count } + (report.counts == nil ? 0 : 4 * report.names.count)
        }
    }

    private var flags: UInt8 {
        switch self {
        case .post(let post):
            (post.retain ? FrameFlags.retain : 0) | (post.origin != nil ? FrameFlags.postOrigin : 0)
                | (post.quiet ? FrameFlags.quiet : 0)
        case .notify(let notify):
            (notify.retained ? FrameFlags.retained : 0) | (notify.retain ? FrameFlags.notifyRetain : 0)
                | (notify.origin != nil ? FrameFlags.notifyOrigin : 0)
        case .error(let error): error.isRefusal ? FrameFlags.refusal : 0
        case .subscribe(let subscribe): subscribe.overflow.rawValue | (subscribe.noLocal ? FrameFlags.noLocal : 0)
        case .will(let will): will.retain ? FrameFlags.retain : 0
        case .namesReport(let report):
            (report.more ? FrameFlags.more : 0) | (report.counts != nil ? FrameFlags.namesReportCounts : 0)
        case .names(let names): names.counts ? FrameFlags.counts : 0
        default: 0
        }
    }

    /// Encodes the frame into `buffer`, which must hold at least `encodedSize` bytes.
    ///
    /// The caller is responsible for the field limits (names of at most 255 bytes, a client label of at
    /// most 64); the library and the broker only build frames from validated values.
    /// - Returns: The number of bytes written, `encodedSize`.
    @discardableResult
    public func encode(to buffer: UnsafeMutableRawBufferPointer) -> Int {
        let size = encodedSize
        precondition(buffer.count >= size, "frame needs \(size) bytes, buffer has \(buffer.count)")
        var writer = ByteWriter(buffer)
        writer.u32(UInt32(size - 4))
        writer.u8(type.rawValue)
        writer.u8(flags)
        switch self {
        case .hello(let hello):
            writer.u16(hello.minVersion)
            writer.u16(hello.maxVersion)
            writer.str8(hello.client)
        case .post(let post):
            writer.u32(post.request)
            writer.str8(post.name)
            if let origin = post.origin { writer.origin(origin) }
            writer.bytes(post.payload)
        case .subscribe(let subscribe):
            writer.u32(subscribe.subscription)
            writer.str8(subscribe.pattern.text)
        case .unsubscribe(let unsubscribe):
            writer.u32(unsubscribe.subscription)
        case .get(let get):
            writer.u32(get.request)
            writer.str8(get.name)
        case .ping(let ping):
            writer.u32(ping.request)
        case .status(let status):
            writer.u32(status.request)
        case .bye:
            break
        case .will(let will):
            writer.u32(will.request)
            writer.u32(will.delayMilliseconds)
            writer.str8(will.name)
            writer.bytes(will.payload)
        case .monitor(let monitor):
            writer.u32(monitor.request)
        case .names(let names):
            writer.u32(names.request)
        case .plugin(let plugin):
            writer.u32(plugin.request)
            writer.u8(plugin.action.rawValue)
            writer.str8(plugin.name)
        case .welcome(let welcome):
            writer.u16(welcome.version)
            writer.u16(welcome.maxSubscriptions)
            writer.u32(welcome.maxPayload)
            writer.u32(welcome.daemonPID)
            writer.str8(welcome.server)
        case .notify(let notify):
            // Field by field, in `FrameLayout.Notify`'s order; the in-place encoder and readers use its offsets.
            assert(writer.offset == FrameLayout.Notify.sequence)
            writer.u64(notify.sequence)
            writer.u64(notify.time)
            writer.i32(notify.pid)
            writer.u32(notify.uid)
            writer.u32(notify.gid)
            writer.u32(notify.subscription)
            assert(writer.offset == FrameLayout.Notify.nameLength)
            writer.str8(notify.name)
            if let origin = notify.origin { writer.origin(origin) }
            writer.bytes(notify.payload)
        case .ack(let ack):
            writer.u32(ack.request)
            writer.u64(ack.sequence)
        case .dropped(let dropped):
            writer.u64(dropped.count)
            writer.u64(dropped.firstSequence)
            writer.u64(dropped.lastSequence)
        case .error(let error):
            writer.u32(error.request)
            writer.u16(error.code.rawValue)
            writer.bytes(Frame.truncatedReason(error.reason).utf8)
        case .statusReport(let report):
            writer.u32(report.request)
            writer.i32(report.pid)
            writer.u64(report.startTime)
            writer.u32(report.connections)
            writer.u32(report.subscriptions)
            writer.u32(report.retained)
            writer.u64(report.posted)
            writer.u64(report.delivered)
            writer.u64(report.dropped)
        case .namesReport(let report):
            writer.u32(report.request)
            if let counts = report.counts {
                for (name, count) in zip(report.names, counts) {
                    writer.str8(name)
                    writer.u32(count)
                }
            } else {
                for name in report.names { writer.str8(name) }
            }
        }
        assert(writer.offset == size, "\(type) wrote \(writer.offset) bytes, expected \(size)")
        return size
    }

    /// The frame's bytes in a new array.
    public func encoded() -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: encodedSize) { buffer, initialized in
            initialized = encode(to: UnsafeMutableRawBufferPointer(buffer))
        }
    }

    /// Appends the frame's bytes to `buffer`.
    public func encode(into buffer: inout [UInt8]) {
        buffer.append(contentsOf: encoded())
    }

    /// An `ERROR` reason cut to the protocol's limit at a character boundary.
    static func truncatedReason(_ reason: String) -> Substring {
        guard reason.utf8.count > Limits.maxReasonBytes else { return reason[...] }
        var end = reason.startIndex
        var used = 0
        for character in reason {
            let width = character.utf8.count
            if used + width > Limits.maxReasonBytes { break }
            used += width
            end = reason.index(after: end)
        }
        return reason[..<end]
    }
}

extension ByteWriter {
    mutating func origin(_ origin: Frame.Origin) {
        str8(origin.host)
        str8(origin.daemon)
        u64(origin.sequence)
    }
}

extension Frame.Notify {
    /// The body bytes of a `NOTIFY` before its name and payload.
    public static let fixedBodySize = FrameLayout.Notify.fixedBodySize
}
