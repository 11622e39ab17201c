/// The outcome of an I/O call on a descriptor that may be non-blocking.
///
/// EAGAIN/EWOULDBLOCK is an ordinary answer for a non-blocking descriptor, not a failure, so it comes back as
/// `.wouldBlock` instead of being thrown: the caller waits for readiness and tries again. Real failures are thrown
/// as ``SystemError``.
public enum IOResult<Value> {
    /// The call completed with this value (for reads and writes: a byte count; for reads, 0 means end of file).
    case processed(Value)
    /// The descriptor is not ready; nothing was done.
    case wouldBlock
}

extension IOResult: Sendable where Value: Sendable {}
extension IOResult: Equatable where Value: Equatable {}
extension IOResult: Hashable where Value: Hashable {}

extension IOResult {
    /// The processed value, or nil for `.wouldBlock`.
    public var value: Value? {
        switch self {
        case .processed(let value): value
        case .wouldBlock: nil
        }
    }

    /// The processed value; on a descriptor that is meant to block, `.wouldBlock` means a SO_SNDTIMEO/SO_RCVTIMEO
    /// timeout expired (or a misconfigured descriptor), so it is thrown as EAGAIN.
    func completed(_ operation: @autoclosure () -> String) throws(SystemError) -> Value {
        switch self {
        case .processed(let value): value
        case .wouldBlock: throw SystemError(operation: operation(), errno: .wouldBlock)
        }
    }
}
