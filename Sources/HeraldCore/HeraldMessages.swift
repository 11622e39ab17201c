#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The typed messages posted to `Message.name`, from ``Herald/messages(of:bufferingPolicy:)``.
///
/// Each payload is decoded as `Message` with JSONDecoder. A payload that does not decode is skipped (and logged at
/// debug level), and so are library notices: this sequence carries messages only. Retained values come first, as in
/// ``HeraldNotifications``, which this wraps; see there for when the sequence ends and when it unsubscribes.
public struct HeraldMessages<Message: HeraldMessage>: AsyncSequence, Sendable {
    /// A message.
    public typealias Element = Message
    /// Never fails: the sequence ends instead, and ``Herald/disconnectReason`` says why.
    public typealias Failure = Never

    let notifications: HeraldNotifications
    let logger: Herald.Logger?

    /// Iterates the messages.
    public struct AsyncIterator: AsyncIteratorProtocol {
        /// A message.
        public typealias Element = Message
        /// Never fails.
        public typealias Failure = Never

        var base: HeraldNotifications.AsyncIterator
        let logger: Herald.Logger?
        let decoder = JSONDecoder()

        /// The next message that decodes, or nil when the connection has ended or the task was cancelled.
        public mutating func next() async -> Message? {
            while let notification = await base.next() {
                if let message = decode(notification) { return message }
            }
            return nil
        }

        /// The next message that decodes, or nil when the connection has ended or the task was cancelled.
        public mutating func next(isolation actor: isolated (any Actor)?) async -> Message? {
            while let notification = await base.next(isolation: actor) {
                if let message = decode(notification) { return message }
            }
            return nil
        }

        private func decode(_ notification: HeraldNotification) -> Message? {
            if let notice = notification.notice {
                logger?.debug("\(Message.self): skipping notice \(notice)")
                return nil
            }
            do {
                return try decoder.decode(Message.self, from: Data(notification.payload))
            } catch {
                logger?.debug(
                    "\(Message.self): skipping a payload of \(notification.name) #\(notification.sequence) "
                        + "that does not decode: \(error)"
                )
                return nil
            }
        }
    }

    /// Makes the iterator; make only one.
    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: notifications.makeAsyncIterator(), logger: logger)
    }
}
