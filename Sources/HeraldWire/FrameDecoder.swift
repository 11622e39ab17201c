/// An incremental frame decoder: feed it bytes as they arrive, take out whole frames.
///
/// It checks everything wire.md lets a receiver check without state: the length prefix against the
/// frame limit (as soon as the 4-byte prefix is in, without buffering the body), the type against the
/// receiver's direction, flags, every field's bounds, UTF-8, names and patterns, and payload size.
/// After it throws a fatal error, the stream is unusable and the peer should be disconnected; further calls to
/// `next()` throw the same error. From ``version`` 2 on, a refusal (``WireError/Code/isRefusal``) is thrown for its
/// frame alone, which has been consumed, and the next call goes on with the next frame.
public struct FrameDecoder: Sendable {
    /// Which side is decoding, and so which frame types are acceptable.
    public enum Role: Sendable {
        /// The daemon: accepts client → daemon frames.
        case daemon
        /// A client: accepts daemon → client frames.
        case client
    }

    public let role: Role
    /// The largest payload accepted in a `POST`.
    public let maxPayload: Int
    /// The largest `length` prefix accepted.
    public var maxFrameLength: Int { scanner.maxFrameLength }
    /// The length prefix check, shared with readers that decode in place.
    public let scanner: FrameScanner
    /// The protocol version of the connection, once `HELLO` has been answered: it decides which flags are defined
    /// and whether a refusal ends the stream. 1 until then.
    public var version: UInt16 = 1

    @usableFromInline var buffer: [UInt8] = []
    @usableFromInline var start = 0
    private var failure: WireError?

    /// Creates a decoder for one connection.
    public init(role: Role, maxPayload: Int = Limits.defaultMaxPayload) {
        self.role = role
        self.maxPayload = maxPayload
        self.scanner = FrameScanner(maxPayload: maxPayload)
    }

    /// Bytes received but not yet returned as frames.
    @inlinable
    public var bufferedByteCount: Int { buffer.count - start }

    /// Adds received bytes.
    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        compact()
        buffer.append(contentsOf: bytes)
    }

    /// Adds received bytes.
    public mutating func append(contentsOf bytes: some Sequence<UInt8>) {
        compact()
        buffer.append(contentsOf: bytes)
    }

    /// Returns the next whole frame, or nil when more bytes are needed.
    ///
    /// - Throws: `WireError` for the first violation of the protocol; the connection should then be
    ///   answered with an `ERROR` frame carrying it, and closed.
    public mutating func next() throws(WireError) -> Frame? {
        if let failure { throw failure }
        do {
            return try decodeNext()
        } catch {
            // A refusal's frame was read whole, so the stream goes on in version 2 (wire.md, "Refusals and fatal
            // errors").
            if !(version >= ProtocolVersion.refusals && error.code.isRefusal) { failure = error }
            throw error
        }
    }

    /// The `length` of the next frame when all of it is buffered, checked against the limits; nil when
    /// more bytes are needed.
    ///
    /// - Throws: `WireError` for a length out of bounds, or the error already met; it is remembered.
    @usableFromInline
    mutating func nextFrameLength() throws(WireError) -> Int? {
        if let failure { throw failure }
        // Array.withUnsafeBytes does not carry typed throws through, so the result travels as a Result.
        let scanned = buffer.withUnsafeBytes { raw in
            Result { () throws(WireError) -> Int? in
                try scanner.frameSize(atStartOf: UnsafeRawBufferPointer(rebasing: raw[start...]))
            }
        }
        let size: Int?
        do {
            size = try scanned.get()
        } catch {
            failure = error
            throw error
        }
        guard let size, size <= buffer.count - start else { return nil }
        return size - 4
    }

    private mutating func decodeNext() throws(WireError) -> Frame? {
        guard let length = try nextFrameLength() else { return nil }
        // Array.withUnsafeBytes does not carry typed throws through, so the result travels as a Result.
        let result = buffer.withUnsafeBytes { raw -> Result<Frame, WireError> in
            let frameBytes = UnsafeRawBufferPointer(rebasing: raw[start + 4..<start + 4 + length])
            return Result { () throws(WireError) -> Frame in
                try Self.decodeBody(
                    typeByte: frameBytes[0],
                    flags: frameBytes[1],
                    body: UnsafeRawBufferPointer(rebasing: frameBytes[2...]),
                    role: role,
                    maxPayload: maxPayload,
                    version: version
                )
            }
        }
        start += 4 + length
        return try result.get()
    }

    /// Drops consumed bytes once they make up most of the buffer, so the buffer stays within one
    /// frame plus one read.
    private mutating func compact() {
        if start == buffer.count {
            buffer.removeAll(keepingCapacity: buffer.capacity <= 65536)
            start = 0
        } else if start > 4096 && start * 2 > buffer.count {
            buffer.removeSubrange(0..<start)
            start = 0
        }
    }

    /// Decodes one frame whose type, flags and body have been split out.
    ///
    /// - Throws: `WireError` as `next()` does. An error about a client frame whose body holds its first field,
    ///   `request` or `subscription`, carries that field's value, whatever the fault (wire.md, `ERROR`).
    public static func decodeBody(
        typeByte: UInt8,
        flags: UInt8,
        body: UnsafeRawBufferPointer,
        role: Role,
        maxPayload: Int,
        version: UInt16 = 1
    ) throws(WireError) -> Frame {
        do {
            return try decodeFields(
                typeByte: typeByte,
                flags: flags,
                body: body,
                role: role,
                maxPayload: maxPayload,
                version: version
            )
        } catch {
            // One rule for every code, applied here rather than at each throw, so no check can forget it.
            guard role == .daemon, let type = FrameType(rawValue: typeByte), type.hasRequestField, body.count >= 4
            else { throw error }
            var answered = error
            answered.request = UInt32(littleEndian: body.loadUnaligned(as: UInt32.self))
            throw answered
        }
    }

    private static func decodeFields(
        typeByte: UInt8,
        flags: UInt8,
        body: UnsafeRawBufferPointer,
        role: Role,
        maxPayload: Int,
        version: UInt16
    ) throws(WireError) -> Frame {
        guard let type = FrameType(rawValue: typeByte), type.isClientFrame == (role == .daemon) else {
            let hex = String(typeByte, radix: 16)
            throw WireError(
                .unknownFrameType,
                "frame type 0x\(hex.count == 1 ? "0" + hex : hex) is not one this side accepts"
            )
        }
        let two = version >= ProtocolVersion.refusals
        let allowedFlags: UInt8 =
            switch type {
            case .post: two ? FrameFlags.retain | FrameFlags.postOrigin | FrameFlags.quiet : FrameFlags.retain
            case .will: FrameFlags.retain
            case .notify:
                two ? FrameFlags.retained | FrameFlags.notifyRetain | FrameFlags.notifyOrigin : FrameFlags.retained
            case .subscribe: two ? FrameFlags.overflowMask | FrameFlags.noLocal : FrameFlags.overflowMask
            case .namesReport: two ? FrameFlags.more | FrameFlags.namesReportCounts : FrameFlags.more
            case .names: two ? FrameFlags.counts : 0
            case .error: two ? FrameFlags.refusal : 0
            default: 0
            }
        guard flags & ~allowedFlags == 0 else {
            throw WireError(.invalidFlags, "\(type) has undefined flag bits set (0x\(String(flags, radix: 16)))")
        }
        var reader = ByteReader(body, frameType: type)
        switch type {
        case .hello:
            let minVersion = try reader.u16("minVersion")
            let maxVersion = try reader.u16("maxVersion")
            let label = try reader.str8("client")
            try reader.finish()
            guard minVersion <= maxVersion else {
                throw WireError(.malformedFrame, "HELLO minVersion \(minVersion) is above maxVersion \(maxVersion)")
            }
            guard label.count <= Limits.maxClientLabelBytes, let client = String(validating: label, as: UTF8.self)
            else {
                throw WireError(.malformedFrame, "HELLO client label must be UTF-8 of at most 64 bytes")
            }
            return .hello(Frame.Hello(minVersion: minVersion, maxVersion: maxVersion, client: client))
        case .post:
            let request = try reader.u32("request")
            let rawName = try reader.str8("name")
            let origin = flags & FrameFlags.postOrigin != 0 ? try reader.origin() : nil
            let name = try Name.decode(rawName, request: request)
            let payload = reader.rest()
            guard payload.count <= maxPayload else {
                throw WireError(
                    .payloadTooLarge,
                    "payload of \(payload.count) bytes is over the limit of \(maxPayload)",
                    request: request
                )
            }
            return .post(
                Frame.Post(
                    request: request,
                    name: name,
                    payload: Self.array(payload),
                    retain: flags & FrameFlags.retain != 0,
                    quiet: flags & FrameFlags.quiet != 0,
                    origin: origin
                )
            )
        case .subscribe:
            let subscription = try reader.u32("subscription")
            let raw = try reader.str8("pattern")
            try reader.finish()
            try requireNonZero(subscription, "SUBSCRIBE subscription")
            guard let text = String(validating: raw, as: UTF8.self) else {
                throw WireError(.invalidPattern, "invalid pattern: not UTF-8", request: subscription)
            }
            guard let overflow = OverflowPolicy(rawValue: flags & FrameFlags.overflowMask) else {
                throw WireError(.invalidFlags, "SUBSCRIBE overflow policy 3 is not defined", request: subscription)
            }
            return .subscribe(
                Frame.Subscribe(
                    subscription: subscription,
                    pattern: try Pattern(text, request: subscription),
                    overflow: overflow,
                    noLocal: flags & FrameFlags.noLocal != 0
                )
            )
        case .unsubscribe:
            let subscription = try reader.u32("subscription")
            try reader.finish()
            try requireNonZero(subscription, "UNSUBSCRIBE subscription")
            return .unsubscribe(Frame.Unsubscribe(subscription: subscription))
        case .get:
            let request = try reader.u32("request")
            let raw = try reader.str8("name")
            try reader.finish()
            try requireNonZero(request, "GET request")
            return .get(Frame.Get(request: request, name: try Name.decode(raw, request: request)))
        case .ping:
            let request = try reader.u32("request")
            try reader.finish()
            try requireNonZero(request, "PING request")
            return .ping(Frame.Ping(request: request))
        case .status:
            let request = try reader.u32("request")
            try reader.finish()
            try requireNonZero(request, "STATUS request")
            return .status(Frame.Status(request: request))
        case .bye:
            try reader.finish()
            return .bye
        case .will:
            let request = try reader.u32("request")
            let delay = try reader.u32("delay")
            let rawName = try reader.str8("name")
            let payload = reader.rest()
            try requireNonZero(request, "WILL request")
            guard delay <= Limits.maxWillDelayMilliseconds else {
                throw WireError(
                    .malformedFrame,
                    "WILL delay \(delay) ms is over the limit of \(Limits.maxWillDelayMilliseconds)",
                    request: request
                )
            }
            // A withdrawal carries nothing to post: a payload with it is a client's mistake, not something to drop.
            guard !rawName.isEmpty || payload.isEmpty else {
                throw WireError(.malformedFrame, "a WILL with an empty name withdraws the will and has no payload")
            }
            let name = rawName.isEmpty ? "" : try Name.decode(rawName, request: request)
            guard payload.count <= maxPayload else {
                throw WireError(
                    .payloadTooLarge,
                    "payload of \(payload.count) bytes is over the limit of \(maxPayload)",
                    request: request
                )
            }
            return .will(
                Frame.Will(
                    request: request,
                    delayMilliseconds: delay,
                    name: name,
                    payload: Self.array(payload),
                    retain: flags != 0
                )
            )
        case .monitor:
            let request = try reader.u32("request")
            try reader.finish()
            try requireNonZero(request, "MONITOR request")
            return .monitor(Frame.Monitor(request: request))
        case .names:
            let request = try reader.u32("request")
            try reader.finish()
            try requireNonZero(request, "NAMES request")
            return .names(Frame.Names(request: request, counts: flags & FrameFlags.counts != 0))
        case .plugin:
            let request = try reader.u32("request")
            let code = try reader.u8("action")
            let name = try reader.text8("name")
            try reader.finish()
            try requireNonZero(request, "PLUGIN request")
            guard let action = Frame.Plugin.Action(rawValue: code) else {
                throw WireError(.malformedFrame, "PLUGIN action \(code) is not 1 to 4", request: request)
            }
            guard (action == .reload) == name.isEmpty else {
                throw WireError(
                    .malformedFrame,
                    action == .reload ? "PLUGIN RELOAD takes no name" : "PLUGIN \(action) needs a plugin's name",
                    request: request
                )
            }
            return .plugin(Frame.Plugin(request: request, action: action, name: name))
        case .welcome:
            let welcome = Frame.Welcome(
                version: try reader.u16("version"),
                maxSubscriptions: try reader.u16("maxSubscriptions"),
                maxPayload: try reader.u32("maxPayload"),
                daemonPID: try reader.u32("daemonPID"),
                server: try reader.text8("server")
            )
            try reader.finish()
            return .welcome(welcome)
        case .notify:
            // Field by field, in `FrameLayout.Notify`'s order (the reader counts from the body's start).
            assert(reader.offset == FrameLayout.Notify.sequence - FrameLayout.body)
            let sequence = try reader.u64("sequence")
            let time = try reader.u64("time")
            let pid = try reader.i32("pid")
            let uid = try reader.u32("uid")
            let gid = try reader.u32("gid")
            let subscription = try reader.u32("subscription")
            assert(reader.offset == FrameLayout.Notify.nameLength - FrameLayout.body)
            let name = try Name.decode(try reader.str8("name"))
            let origin = flags & FrameFlags.notifyOrigin != 0 ? try reader.origin() : nil
            return .notify(
                Frame.Notify(
                    sequence: sequence,
                    time: time,
                    pid: pid,
                    uid: uid,
                    gid: gid,
                    subscription: subscription,
                    retained: flags & FrameFlags.retained != 0,
                    retain: flags & FrameFlags.notifyRetain != 0,
                    name: name,
                    origin: origin,
                    payload: Self.array(reader.rest())
                )
            )
        case .ack:
            let ack = Frame.Ack(request: try reader.u32("request"), sequence: try reader.u64("sequence"))
            try reader.finish()
            return .ack(ack)
        case .dropped:
            let dropped = Frame.Dropped(
                count: try reader.u64("count"),
                firstSequence: try reader.u64("firstSequence"),
                lastSequence: try reader.u64("lastSequence")
            )
            try reader.finish()
            return .dropped(dropped)
        case .error:
            let request = try reader.u32("request")
            let code = try reader.u16("code")
            let raw = reader.rest()
            guard raw.count <= Limits.maxReasonBytes, let reason = String(validating: raw, as: UTF8.self) else {
                throw WireError(.malformedFrame, "ERROR reason must be UTF-8 of at most \(Limits.maxReasonBytes) bytes")
            }
            return .error(
                WireError(WireError.Code(rawValue: code), reason, request: request, isRefusal: flags != 0)
            )
        case .statusReport:
            let report = Frame.StatusReport(
                request: try reader.u32("request"),
                pid: try reader.i32("pid"),
                startTime: try reader.u64("startTime"),
                connections: try reader.u32("connections"),
                subscriptions: try reader.u32("subscriptions"),
                retained: try reader.u32("retained"),
                posted: try reader.u64("posted"),
                delivered: try reader.u64("delivered"),
                dropped: try reader.u64("dropped")
            )
            try reader.finish()
            return .statusReport(report)
        case .namesReport:
            let request = try reader.u32("request")
            let withCounts = flags & FrameFlags.namesReportCounts != 0
            var names: [String] = []
            var counts: [UInt32] = []
            while reader.remaining > 0 {
                names.append(try Name.decode(try reader.str8("names")))
                if withCounts { counts.append(try reader.u32("count")) }
            }
            return .namesReport(
                Frame.NamesReport(
                    request: request,
                    names: names,
                    more: flags & FrameFlags.more != 0,
                    counts: withCounts ? counts : nil
                )
            )
        }
    }

    /// Copies bytes into a new array with one `memcpy`, not the generic collection copy (~170 instructions
    /// more per frame).
    private static func array(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: bytes.count) { buffer, initialized in
            UnsafeMutableRawBufferPointer(buffer).copyMemory(from: bytes)
            initialized = bytes.count
        }
    }

    private static func requireNonZero(_ value: UInt32, _ field: String) throws(WireError) {
        guard value != 0 else {
            throw WireError(.invalidRequest, "\(field) must not be 0")
        }
    }
}

extension Frame {
    /// Decodes exactly one whole frame.
    ///
    /// - Throws: `WireError` for a violation, including `MALFORMED_FRAME` when `bytes` holds less or more
    ///   than one frame.
    public static func decode(
        _ bytes: some Collection<UInt8>,
        role: FrameDecoder.Role,
        maxPayload: Int = Limits.defaultMaxPayload,
        version: UInt16 = 1
    ) throws(WireError) -> Frame {
        var decoder = FrameDecoder(role: role, maxPayload: maxPayload)
        decoder.version = version
        decoder.append(contentsOf: bytes)
        guard let frame = try decoder.next() else {
            throw WireError(.malformedFrame, "truncated frame: \(bytes.count) bytes")
        }
        guard decoder.bufferedByteCount == 0 else {
            throw WireError(.malformedFrame, "\(decoder.bufferedByteCount) bytes after the frame")
        }
        return frame
    }
}
