internal import CHeraldShim

extension FileDescriptor {
    /// The most descriptors one message can carry on Linux (SCM_MAX_FD).
    public static var maximumPassedDescriptors: Int { 253 }

    /// Sends bytes on a Unix socket with descriptors attached (SCM_RIGHTS), with `MSG_NOSIGNAL`.
    ///
    /// The descriptors travel with the first byte sent; the caller keeps its own copies open and closes them.
    ///
    /// - Returns: `.processed(n)` with the number of bytes sent (the descriptors went with the first), or
    ///   `.wouldBlock` (nothing was sent, descriptors included).
    /// - Throws: ``SystemError``, e.g. EPIPE, or EINVAL for more than ``maximumPassedDescriptors``.
    public borrowing func send(
        _ bytes: UnsafeRawBufferPointer,
        passing descriptors: [Int32]
    ) throws(SystemError) -> IOResult<Int> {
        try retryingSyscall("send to descriptor \(rawValue) with \(descriptors.count) descriptors") {
            descriptors.withUnsafeBufferPointer { passed in
                herald_send_with_descriptors(
                    rawValue,
                    bytes.baseAddress,
                    bytes.count,
                    passed.baseAddress,
                    Int32(passed.count)
                )
            }
        }
    }

    /// Reads from a Unix socket, collecting the descriptors the peer attached (received close-on-exec).
    ///
    /// - Parameters:
    ///   - buffer: where to put the bytes; must not be empty.
    ///   - descriptors: the received descriptors are appended; the caller owns them and must close them.
    /// - Returns: `.processed(n)` with the number of bytes read (0 at end of file), or `.wouldBlock`.
    /// - Throws: ``SystemError``, e.g. ECONNRESET.
    public borrowing func receive(
        into buffer: UnsafeMutableRawBufferPointer,
        descriptors: inout [Int32]
    ) throws(SystemError) -> IOResult<Int> {
        precondition(buffer.count > 0, "receive(into:descriptors:) needs a non-empty buffer")
        var passed = [Int32](repeating: -1, count: Self.maximumPassedDescriptors)
        var count: Int32 = 0
        let result = try retryingSyscall("read from descriptor \(rawValue)") {
            passed.withUnsafeMutableBufferPointer { slots in
                herald_receive_with_descriptors(
                    rawValue,
                    buffer.baseAddress,
                    buffer.count,
                    slots.baseAddress,
                    Int32(slots.count),
                    &count
                )
            }
        }
        descriptors += passed.prefix(Int(count))
        return result
    }
}
