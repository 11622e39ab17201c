import HeraldPosix
import Synchronization

/// Lets a cancelled task stop the handshake that a connection's thread is blocked in: it shuts the socket down, and
/// the thread's read returns at once instead of after `requestTimeout`.
final class HandshakeCancellation: Sendable {
    private struct State {
        var socket: Int32?
        var cancelled = false
    }

    private let state = Mutex(State())

    /// The handshake starts on `socket`.
    ///
    /// - Returns: false when the task was cancelled already: the thread gives up.
    func begin(_ socket: Int32) -> Bool {
        state.withLock { state in
            guard !state.cancelled else { return false }
            state.socket = socket
            return true
        }
    }

    /// The handshake is over: the socket is about to be closed or handed on, so it is not shut down from here any
    /// more (its number could belong to another file once closed).
    ///
    /// - Returns: whether the task was cancelled meanwhile.
    func end() -> Bool {
        state.withLock { state in
            state.socket = nil
            return state.cancelled
        }
    }

    /// The task was cancelled.
    func cancel() {
        state.withLock { state in
            state.cancelled = true
            // Under the lock, so `end()` cannot let the socket be closed in between.
            if let socket = state.socket { FileDescriptor.shutdown(ownedElsewhere: socket) }
        }
    }
}
