#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Runs a system call with HeraldPosix's one error policy; every syscall in the module goes through here
/// (except `close`, whose EINTR must not be retried; see ``FileDescriptor/close()``).
///
/// - EINTR: the call is retried; a signal arriving is never a failure.
/// - EAGAIN/EWOULDBLOCK: returns `.wouldBlock`.
/// - EBADF/EFAULT: traps, because a closed descriptor or a bad pointer is a bug in Herald, and carrying on could
///   read or write someone else's descriptor.
/// - anything else: throws a ``SystemError`` naming `operation`.
///
/// - Parameters:
///   - operation: what is being done, for the error message, e.g. "bind /tmp/x".
///   - body: the call; it returns -1 and sets errno on failure.
@inline(__always)
func retryingSyscall<Result: FixedWidthInteger>(
    _ operation: @autoclosure () -> String,
    _ body: () -> Result
) throws(SystemError) -> IOResult<Result> {
    while true {
        let result = body()
        if result != -1 {
            return .processed(result)
        }
        let error = Errno.current
        if error == .interrupted { continue }
        return try failedSyscall(error, operation())
    }
}

/// The policy's answer to a failure other than EINTR, which each caller handles its own way (``retryingSyscall(_:_:)``
/// retries; a batched send that was interrupted reports that nothing was done): `.wouldBlock` for EAGAIN, a trap for
/// EBADF and EFAULT, and a thrown ``SystemError`` naming `operation` for anything else.
@inline(__always)
func failedSyscall<Value>(
    _ error: Errno,
    _ operation: @autoclosure () -> String
) throws(SystemError) -> IOResult<Value> {
    switch error {
    case .wouldBlock, Errno(rawValue: EWOULDBLOCK):
        return .wouldBlock
    case .badFileDescriptor, Errno(rawValue: EFAULT):
        preconditionFailure("\(operation()) failed with \(error): this is a bug in Herald")
    default:
        throw SystemError(operation: operation(), errno: error)
    }
}

/// ``retryingSyscall(_:_:)`` for calls where EAGAIN cannot be a readiness answer (bind, listen, fcntl, a blocking
/// descriptor): EAGAIN is thrown too.
@inline(__always)
func completedSyscall<Result: FixedWidthInteger>(
    _ operation: @autoclosure () -> String,
    _ body: () -> Result
) throws(SystemError) -> Result {
    try retryingSyscall(operation(), body).completed(operation())
}
