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
