public import Foundation
import Synchronization

#if !canImport(Darwin)
// Foundation on Apple platforms has had `notifications(named:object:)` since macOS 12; swift-corelibs-foundation
// has not. This supplies it with Apple's signature, so code written for Apple platforms compiles and runs here too.

extension NotificationCenter {
    /// Returns an asynchronous sequence of notifications produced by this center for a given notification name and
    /// optional source object.
    ///
    /// The observer is registered before this returns, so no notification posted afterwards is missed; they wait in
    /// a bounded buffer (the oldest 4096 are kept) until the sequence is iterated. The observer is removed when the
    /// consuming task is cancelled, or when the sequence and its iterator are released: no observer outlives the
    /// sequence, the leak of the classic `addObserver`-to-`AsyncStream` wrapper.
    ///
    /// - Parameters:
    ///   - name: the notification name to observe.
    ///   - object: only notifications posted with this object; nil for any.
    /// - Returns: the notifications, in the order they were posted.
    public func notifications(named name: Notification.Name, object: AnyObject? = nil) -> Notifications {
        Notifications(center: self, name: name, object: object)
    }

    /// The notifications of one observer: what ``NotificationCenter/notifications(named:object:)`` returns.
    ///
    /// A single-consumer sequence: iterate it from one task.
    public final class Notifications: AsyncSequence, Sendable {
        /// A notification.
        public typealias Element = Notification
        /// Never fails: the sequence ends when the consuming task is cancelled.
        public typealias Failure = Never

        /// Carries a `Notification`, which corelibs does not mark `Sendable`, from the posting thread to the one
        /// consumer. Invariant: the observer hands each notification to the stream and never touches it again,
        /// and only the single iterator reads it.
        struct Transfer: @unchecked Sendable {
            let notification: Notification
        }

        private let stream: AsyncStream<Transfer>
        private let continuation: AsyncStream<Transfer>.Continuation
        private let observer: ObserverToken

        /// Whether the observer is still registered (for tests: it must not outlive the sequence).
        var isObserving: Bool { observer.isHeld }

        init(center: NotificationCenter, name: Notification.Name, object: AnyObject?) {
            let (stream, continuation) = AsyncStream.makeStream(
                of: Transfer.self,
                bufferingPolicy: .bufferingOldest(4096)
            )
            self.stream = stream
            self.continuation = continuation
            let token = center.addObserver(forName: name, object: object, queue: nil) { notification in
                continuation.yield(Transfer(notification: notification))
            }
            let observer = ObserverToken(token)
            self.observer = observer
            // Runs once, whichever way the stream ends: cancellation, the iterator released, or this sequence.
            continuation.onTermination = { _ in
                if let token = observer.take() { center.removeObserver(token) }
            }
        }

        deinit {
            continuation.finish()
        }

        /// Iterates the notifications.
        public struct AsyncIterator: AsyncIteratorProtocol {
            var base: AsyncStream<Transfer>.Iterator
            /// Keeps the sequence, and so the observer, alive while iterating.
            let owner: Notifications

            /// The next notification, or nil once the consuming task is cancelled.
            public mutating func next() async -> Notification? {
                await base.next()?.notification
            }
        }

        /// Makes the iterator; make only one.
        public func makeAsyncIterator() -> AsyncIterator {
            AsyncIterator(base: stream.makeAsyncIterator(), owner: self)
        }
    }
}

#endif

/// An observer token from `addObserver(forName:object:queue:using:)`, which is not `Sendable`, held for the one
/// `removeObserver` call. Invariant: the token is only read under the mutex, and taken at most once.
final class ObserverToken: Sendable {
    private let token: Mutex<Transfer?>

    struct Transfer: @unchecked Sendable {
        let value: any NSObjectProtocol
    }

    init(_ token: any NSObjectProtocol) {
        self.token = Mutex(Transfer(value: token))
    }

    /// Whether the token has not been taken yet.
    var isHeld: Bool {
        token.withLock { $0 != nil }
    }

    /// The token, the first time; nil afterwards.
    func take() -> (any NSObjectProtocol)? {
        token.withLock { stored in
            defer { stored = nil }
            return stored?.value
        }
    }
}
