/// A `NOTIFY` frame read where it lies: the fixed fields as values, the name and payload as byte ranges of the
/// buffer it was read from.
///
/// A client routing thousands of notifications per read needs no `String` and no array per frame to decide where
/// one goes, nor to keep its bytes: it keeps the buffer. ``init(frameIn:at:)`` reads only the frames it can read in
/// full and in place; for any other frame it returns nil, and ``FrameDecoder``'s `decodeBody` decodes it (or says
/// exactly what is wrong with it), so the two together accept exactly what the decoder accepts.
public struct NotifyView: Sendable, Hashable {
    /// The post's daemon-wide sequence number.
    public let sequence: UInt64
    /// When the daemon received the post, in nanoseconds since the Unix epoch.
    public let time: UInt64
    /// The poster's process id.
    public let pid: Int32
    /// The poster's user id.
    public let uid: UInt32
    /// The poster's group id.
    public let gid: UInt32
    /// 0 for a live post; otherwise the subscription or `GET` request a retained value answers.
    public let subscription: UInt32
    /// Whether the `RETAINED` flag is set.
    public let retained: Bool
    /// Where the name's bytes are in the buffer given to ``init(frameIn:at:)``.
    public let name: Range<Int>
    /// Where the payload's bytes are in the buffer given to ``init(frameIn:at:)``.
    public let payload: Range<Int>

    /// Reads the frame that starts at `start` in `bytes` as a `NOTIFY`.
    ///
    /// - Returns: nil when the frame is not one this view reads in place: not all in `bytes`, another type, flags
    ///   other than `RETAINED`, a body shorter than its fields, or a name that is not a plain ASCII name (non-ASCII
    ///   names are valid, but checking them takes the decoder's full path). Decode such a frame with
    ///   ``FrameDecoder``'s `decodeBody`.
    ///
    /// Inlinable, so the library's reader builds the view in registers: called across the module boundary, the view
    /// came back through memory and was copied field by field, and the loads of those copies waited on the stores
    /// (perf annotate, herald-bench fan-out 100: half of the routing loop's own samples).
    @inlinable @inline(__always)
    public init?(frameIn bytes: UnsafeRawBufferPointer, at start: Int) {
        self.init(frameIn: bytes, at: start, checkingName: Name.isPlainASCIIName)
    }

    /// Reads the frame that starts at `start` in `bytes` as a `NOTIFY`, as ``init(frameIn:at:)`` does, with the
    /// name's bytes checked by `checkingName` instead.
    ///
    /// For a reader that routes runs of one name: it checks a name once and passes a check that answers at once for
    /// the same bytes again. `checkingName` must accept only what ``Name/isPlainASCIIName(_:)`` accepts.
    @inlinable @inline(__always)
    public init?(
        frameIn bytes: UnsafeRawBufferPointer,
        at start: Int,
        checkingName: (UnsafeRawBufferPointer) -> Bool
    ) {
        typealias Layout = FrameLayout.Notify
        guard start >= 0, bytes.count - start >= FrameLayout.body else { return nil }
        let length = Int(
            UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: start + FrameLayout.length, as: UInt32.self))
        )
        let end = start + FrameLayout.lengthSize + length
        guard length >= FrameLayout.body - FrameLayout.lengthSize, end <= bytes.count else { return nil }
        guard bytes[start + FrameLayout.type] == FrameType.notify.rawValue else { return nil }
        let flags = bytes[start + FrameLayout.flags]
        guard flags & ~FrameFlags.retained == 0 else { return nil }
        guard end - start >= Layout.name else { return nil }
        let nameStart = start + Layout.name
        let nameEnd = nameStart + Int(bytes[start + Layout.nameLength])
        guard nameEnd <= end, checkingName(UnsafeRawBufferPointer(rebasing: bytes[nameStart..<nameEnd])) else {
            return nil
        }
        let fields = UnsafeRawBufferPointer(rebasing: bytes[start..<end])
        self.sequence = UInt64(littleEndian: fields.loadUnaligned(fromByteOffset: Layout.sequence, as: UInt64.self))
        self.time = UInt64(littleEndian: fields.loadUnaligned(fromByteOffset: Layout.time, as: UInt64.self))
        self.pid = Int32(littleEndian: fields.loadUnaligned(fromByteOffset: Layout.pid, as: Int32.self))
        self.uid = UInt32(littleEndian: fields.loadUnaligned(fromByteOffset: Layout.uid, as: UInt32.self))
        self.gid = UInt32(littleEndian: fields.loadUnaligned(fromByteOffset: Layout.gid, as: UInt32.self))
        self.subscription = UInt32(
            littleEndian: fields.loadUnaligned(fromByteOffset: Layout.subscription, as: UInt32.self)
        )
        self.retained = flags != 0
        self.name = nameStart..<nameEnd
        self.payload = nameEnd..<end
    }
}
