/// Waits until `condition` holds, checking every 10 ms, for at most `timeout`: the bounded wait on a condition that
/// tests use instead of a bare sleep.
///
/// - Returns: whether the condition held, checked once more when the time is up.
/// - Throws: what `condition` threw, or `CancellationError` if the task was cancelled while waiting.
public func eventually(
    timeout: Duration = .seconds(10),
    _ condition: () async throws -> Bool
) async throws -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try await Task.sleep(for: .milliseconds(10))
    }
    return try await condition()
}

/// Waits until an attempt succeeds, where an attempt that throws means "not yet", not a failure: a retried
/// connection that the other side refuses and closes (a reset, a broken pipe on its handshake) while it still counts
/// one that is closing. Checks every 10 ms, for at most `timeout`.
///
/// - Returns: whether an attempt succeeded.
/// - Throws: the last attempt's error when none succeeded in time, so the test says why; `CancellationError` if the
///   task was cancelled.
public func eventuallySucceeds(
    timeout: Duration = .seconds(10),
    _ attempt: () async throws -> Bool
) async throws -> Bool {
    var lastError: (any Error)?
    let succeeded = try await eventually(timeout: timeout) {
        do {
            let done = try await attempt()
            if done { lastError = nil }
            return done
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            lastError = error
            return false
        }
    }
    if !succeeded, let lastError { throw lastError }
    return succeeded
}
