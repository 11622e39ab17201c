/// Splits a byte stream into messages, refusing one over the bound as soon as its fixed header is in.
///
/// Feed it what the socket gives with ``append(_:)``, then call ``nextMessage()`` until it returns nil;
/// ``bytesNeeded`` says how many more bytes the next message needs, so a reader knows a message's size from its first
/// 16 bytes and never buffers a body it will refuse. After a throw the stream is unusable.
public struct MessageDecoder: Sendable {
    /// The largest message accepted, in bytes; at most ``DBusMessage/maximumLength``.
    public let maximumLength: Int
    private var buffer: [UInt8] = []
    private var start = 0
    /// The length of the message being gathered, once its fixed header is in.
    private var pendingLength: Int?

    /// Creates a decoder.
    ///
    /// - Parameter maximumLength: the bound on a message, clamped to the specification's 128 MiB.
    public init(maximumLength: Int = DBusMessage.maximumLength) {
        self.maximumLength = min(maximumLength, DBusMessage.maximumLength)
    }

    /// The bytes held and not yet decoded.
    public var bufferedCount: Int { buffer.count - start }

    /// How many more bytes the next message needs: at least 1 until a whole message is buffered, then 0.
    public var bytesNeeded: Int {
        let target = pendingLength ?? DBusMessage.fixedHeaderLength
        return max(0, target - bufferedCount)
    }

    /// Appends bytes read from the stream.
    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        if start > 0, start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            start = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// Appends bytes read from the stream.
    public mutating func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { append($0) }
    }

    /// The next whole message, or nil when more bytes are needed.
    ///
    /// - Throws: ``DBusError``: ``DBusError/Code/messageTooLarge`` from the first 16 bytes of a message over the bound,
    ///   or whatever ``DBusMessage/init(decoding:)-(UnsafeRawBufferPointer)`` finds wrong.
    public mutating func nextMessage() throws(DBusError) -> DBusMessage? {
        guard let length = try measure(), bufferedCount >= length else { return nil }
        let messageStart = start
        start += length
        pendingLength = nil
        defer { compact() }
        return try buffer.withUnsafeBytes { raw in
            Result { () throws(DBusError) in
                try DBusMessage(decoding: UnsafeRawBufferPointer(rebasing: raw[messageStart..<messageStart + length]))
            }
        }.get()
    }

    /// The next whole message's bytes without decoding them, or nil when more bytes are needed; for relaying.
    ///
    /// - Throws: ``DBusError`` when the fixed header is bad or over the bound.
    public mutating func nextMessageBytes() throws(DBusError) -> [UInt8]? {
        guard let length = try measure(), bufferedCount >= length else { return nil }
        let bytes = Array(buffer[start..<start + length])
        start += length
        pendingLength = nil
        compact()
        return bytes
    }

    private mutating func measure() throws(DBusError) -> Int? {
        if let pendingLength { return pendingLength }
        guard bufferedCount >= DBusMessage.fixedHeaderLength else { return nil }
        let length = try buffer.withUnsafeBytes { raw in
            Result { () throws(DBusError) in
                try DBusMessage.length(
                    ofHeader: UnsafeRawBufferPointer(rebasing: raw[start..<start + DBusMessage.fixedHeaderLength]),
                    maximumLength: maximumLength
                )
            }
        }.get()
        pendingLength = length
        return length
    }

    /// Drops decoded bytes once they are the larger part of the buffer, so the buffer does not grow with the stream.
    private mutating func compact() {
        if start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            start = 0
        } else if start > 4096, start > buffer.count / 2 {
            buffer.removeFirst(start)
            start = 0
        }
    }
}
