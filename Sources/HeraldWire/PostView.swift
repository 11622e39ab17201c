/// A `POST` frame read in place from the decoder's buffer, checked exactly as `FrameDecoder.next()` checks
/// one. The daemon's fast path: a post is routed and its `NOTIFY` encoded from these bytes, with no `String`
/// or array made for it. Valid only inside the call it is handed to.
public struct PostView {
    /// 0 for no reply; otherwise the daemon answers `ACK` with this value.
    public let request: UInt32
    /// Also store the payload as the name's retained value.
    public let retain: Bool
    /// Version 2's `QUIET`: no `ACK` for an accepted post with a `request`.
    public let quiet: Bool
    /// The name's bytes: a valid name of printable ASCII (others take the `Frame` path).
    public let name: UnsafeRawBufferPointer
    public let payload: UnsafeRawBufferPointer

    /// The same post as a `Frame.Post`, for the paths that keep it.
    public var post: Frame.Post {
        Frame.Post(
            request: request,
            name: String(decoding: name, as: UTF8.self),
            payload: [UInt8](payload),
            retain: retain,
            quiet: quiet
        )
    }

    /// Whether the name lies in the reserved `herald.` namespace; `Name.isReserved` on the bytes.
    public var isReservedName: Bool {
        // `herald`, byte by byte: the generic walk over the prefix's UTF8View cost ~70 instructions a post.
        guard name.count >= 6, name[0] == 0x68, name[1] == 0x65, name[2] == 0x72, name[3] == 0x61,
            name[4] == 0x6C, name[5] == 0x64
        else { return false }
        assert(Name.reservedPrefix == "herald")
        return name.count == 6 || name[6] == UInt8(ascii: ".")
    }
}

extension FrameDecoder {
    /// The next whole frame: a `POST` read in place, or any frame decoded.
    public enum Next {
        case post(PostView)
        case frame(Frame)
    }

    /// Calls `body` with the next whole frame and returns its result, or returns nil when more bytes are
    /// needed. A `POST` with a plain ASCII name comes as a `PostView` into the buffer, valid only during
    /// the call; every other frame, and any `POST` the fast check does not accept, as `next()` decodes it.
    ///
    /// - Throws: `WireError` as `next()` does; then `body` is not called.
    // Inlinable so that it is specialised for the caller's `R`: unspecialised, every call looked up the
    // generic metadata of `R?` at run time (~550 instructions a post in heraldd's profile).
    @inlinable
    public mutating func withNextFrame<R>(_ body: (Next) -> R) throws(WireError) -> R? {
        guard let length = try nextFrameLength() else { return nil }
        var result: R?
        var handled = false
        buffer.withUnsafeBytes { raw in
            let frame = UnsafeRawBufferPointer(rebasing: raw[start + 4..<start + 4 + length])
            guard let view = Self.postView(frame, role: role, maxPayload: maxPayload, version: version) else { return }
            result = body(.post(view))
            handled = true
        }
        if handled {
            start += 4 + length
            return result
        }
        guard let frame = try next() else { return nil }
        return body(.frame(frame))
    }

    /// Calls `body` with the whole frame `frame` (its length prefix included, as ``FrameScanner`` measured it):
    /// a `POST` with a plain ASCII name as a `PostView` into `frame`, anything else decoded. For a reader that
    /// decodes frames where they lie, such as heraldd reading straight from its read buffer.
    ///
    /// - Throws: `WireError` as `next()` would for the same frame; then `body` is not called.
    @inlinable
    public static func withFrame<R>(
        _ frame: UnsafeRawBufferPointer,
        role: Role,
        maxPayload: Int,
        version: UInt16 = 1,
        _ body: (Next) -> R
    ) throws(WireError) -> R {
        body(try self.frame(frame, role: role, maxPayload: maxPayload, version: version))
    }

    /// The whole frame `frame` (its length prefix included, as ``FrameScanner`` measured it): a `POST` with a plain
    /// ASCII name as a `PostView` into `frame`, valid as long as `frame`'s memory is, anything else decoded.
    ///
    /// Returned rather than handed to a closure, so that a caller that owns the memory for longer (heraldd's broker,
    /// during one read) does not call back into itself through this module.
    ///
    /// - Throws: `WireError` as `next()` would for the same frame.
    @inlinable
    public static func frame(
        _ frame: UnsafeRawBufferPointer,
        role: Role,
        maxPayload: Int,
        version: UInt16 = 1
    ) throws(WireError) -> Next {
        let content = UnsafeRawBufferPointer(rebasing: frame[4...])
        if let view = postView(content, role: role, maxPayload: maxPayload, version: version) {
            return .post(view)
        }
        let decoded = try decodeBody(
            typeByte: content[0],
            flags: content[1],
            body: UnsafeRawBufferPointer(rebasing: content[2...]),
            role: role,
            maxPayload: maxPayload,
            version: version
        )
        return .frame(decoded)
    }

    /// A view of `frameBytes` (type, flags, body) when it is a `POST` the fast path takes: well formed,
    /// a plain ASCII name, a payload within the limit. Anything else is nil and goes through `decodeBody`,
    /// which also words the error.
    @usableFromInline
    static func postView(
        _ frameBytes: UnsafeRawBufferPointer,
        role: Role,
        maxPayload: Int,
        version: UInt16 = 1
    ) -> PostView? {
        // Version 2's QUIET is read in place too (the library sets it on every post); an ORIGIN is decoded.
        let plainFlags = version >= ProtocolVersion.refusals ? FrameFlags.retain | FrameFlags.quiet : FrameFlags.retain
        guard role == .daemon, frameBytes.count >= 2 + 5, frameBytes[0] == FrameType.post.rawValue,
            frameBytes[1] & ~plainFlags == 0
        else { return nil }
        let nameCount = Int(frameBytes[6])
        let payloadStart = 7 + nameCount
        guard frameBytes.count >= payloadStart, frameBytes.count - payloadStart <= maxPayload else { return nil }
        let name = UnsafeRawBufferPointer(rebasing: frameBytes[7..<payloadStart])
        guard Name.isPlainASCIIName(name) else { return nil }
        return PostView(
            request: UInt32(littleEndian: frameBytes.loadUnaligned(fromByteOffset: 2, as: UInt32.self)),
            retain: frameBytes[1] & FrameFlags.retain != 0,
            quiet: frameBytes[1] & FrameFlags.quiet != 0,
            name: name,
            payload: UnsafeRawBufferPointer(rebasing: frameBytes[payloadStart...])
        )
    }
}

extension Frame.Notify {
    /// The size of a live `NOTIFY` for a name and payload of these sizes.
    public static func encodedSize(nameCount: Int, payloadCount: Int) -> Int {
        FrameLayout.Notify.frameSize(nameCount: nameCount, payloadCount: payloadCount)
    }

    /// Encodes a live `NOTIFY` (subscription 0, not retained) from raw name and payload bytes, as
    /// `Frame.encode(to:)` would encode the same values, into `buffer`, which must be large enough.
    ///
    /// - Returns: The number of bytes written.
    @discardableResult
    public static func encodeLive(
        sequence: UInt64,
        time: UInt64,
        pid: Int32,
        uid: UInt32,
        gid: UInt32,
        name: UnsafeRawBufferPointer,
        payload: UnsafeRawBufferPointer,
        to buffer: UnsafeMutableRawPointer
    ) -> Int {
        typealias Layout = FrameLayout.Notify
        let size = encodedSize(nameCount: name.count, payloadCount: payload.count)
        buffer.storeBytes(
            of: UInt32(size - FrameLayout.lengthSize).littleEndian,
            toByteOffset: FrameLayout.length,
            as: UInt32.self
        )
        buffer.storeBytes(of: FrameType.notify.rawValue, toByteOffset: FrameLayout.type, as: UInt8.self)
        buffer.storeBytes(of: 0, toByteOffset: FrameLayout.flags, as: UInt8.self)
        buffer.storeBytes(of: sequence.littleEndian, toByteOffset: Layout.sequence, as: UInt64.self)
        buffer.storeBytes(of: time.littleEndian, toByteOffset: Layout.time, as: UInt64.self)
        buffer.storeBytes(of: UInt32(bitPattern: pid).littleEndian, toByteOffset: Layout.pid, as: UInt32.self)
        buffer.storeBytes(of: uid.littleEndian, toByteOffset: Layout.uid, as: UInt32.self)
        buffer.storeBytes(of: gid.littleEndian, toByteOffset: Layout.gid, as: UInt32.self)
        buffer.storeBytes(of: 0, toByteOffset: Layout.subscription, as: UInt32.self)
        buffer.storeBytes(of: UInt8(name.count), toByteOffset: Layout.nameLength, as: UInt8.self)
        if !name.isEmpty { (buffer + Layout.name).copyMemory(from: name.baseAddress!, byteCount: name.count) }
        if !payload.isEmpty {
            let payloadStart = Layout.payload(nameCount: name.count)
            (buffer + payloadStart).copyMemory(from: payload.baseAddress!, byteCount: payload.count)
        }
        return size
    }
}
