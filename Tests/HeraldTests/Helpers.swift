import Foundation
import Herald
import HeraldTestSupport
import Testing

/// Starts a real heraldd on a temporary socket, runs `body` with it, and stops it.
func withDaemon(
    _ arguments: [String] = [],
    _ body: (TestDaemon) async throws -> Void
) async throws {
    let daemon = try await TestDaemon.start(arguments: arguments)
    try await body(daemon)
    try await daemon.stop()
}

/// Connects a client to `daemon`.
func connect(_ daemon: TestDaemon, name: String = "herald-tests", reconnects: Bool = true) async throws -> Herald {
    try await Herald.connect(
        socketPath: daemon.socketPath,
        options: Herald.Options(clientName: name, reconnects: reconnects)
    )
}

/// Runs `attempt` again while it times out, for up to a minute, and returns its first answer; any other error is
/// thrown at once. For tests that set a short request timeout on purpose: a whole parallel run on two cores can starve
/// the daemon or this process past it, and a request that timed out means "not yet" there.
func retryingTimeouts<Value>(_ attempt: () async throws(HeraldError) -> Value) async throws(HeraldError) -> Value {
    let deadline = ContinuousClock.now + .seconds(60)
    while true {
        do {
            return try await attempt()
        } catch {
            guard error.code == .timedOut, ContinuousClock.now < deadline else { throw error }
        }
    }
}

/// Connects with `options` whose request timeout is short on purpose, for a test of what happens after the
/// handshake: a `HELLO` that timed out is tried again (``retryingTimeouts(_:)``).
func connectDespiteAShortTimeout(socketPath: String, options: Herald.Options) async throws -> Herald {
    try await retryingTimeouts { () throws(HeraldError) in
        try await Herald.connect(socketPath: socketPath, options: options)
    }
}

/// Whether `notifications` ends (its iterator returns nil) within `timeout`, as opposed to yielding or hanging.
func ends(_ notifications: HeraldNotifications, within timeout: Duration = .seconds(10)) async -> Bool {
    await withTaskGroup(of: Bool?.self) { group in
        group.addTask {
            var iterator = notifications.makeAsyncIterator()
            while let notification = await iterator.next() {
                if notification.notice == nil { return false }
            }
            return !Task.isCancelled
        }
        group.addTask {
            try? await Task.sleep(for: timeout)
            return nil
        }
        let first = await group.next() ?? nil
        group.cancelAll()
        return first ?? false
    }
}

/// Takes up to `count` notifications from `notifications`, giving up after `timeout`.
///
/// Returns fewer than `count` when the sequence ends or the time runs out, so a missing notification fails the
/// test's count assertion instead of hanging it.
func collect(
    _ count: Int,
    from notifications: HeraldNotifications,
    timeout: Duration = .seconds(10)
) async -> [HeraldNotification] {
    await withTaskGroup(of: [HeraldNotification]?.self) { group in
        group.addTask {
            var received: [HeraldNotification] = []
            guard count > 0 else { return received }
            for await notification in notifications {
                received.append(notification)
                if received.count == count { break }
            }
            return received
        }
        group.addTask {
            try? await Task.sleep(for: timeout)
            return nil
        }
        // Whichever finishes first, cancel the other: a cancelled collector ends its loop and returns what it has.
        var result: [HeraldNotification] = []
        while let finished = await group.next() {
            group.cancelAll()
            if let finished { result = finished }
        }
        return result
    }
}

/// Runs `body`, which must throw a `HeraldError`, and returns it.
func heraldError(_ body: () async throws -> Void) async -> HeraldError? {
    do {
        try await body()
        return nil
    } catch let error as HeraldError {
        return error
    } catch {
        Issue.record("expected a HeraldError, got \(error)")
        return nil
    }
}
