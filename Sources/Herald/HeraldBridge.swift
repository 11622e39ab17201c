public import Foundation
import HeraldPosix
import HeraldWire
import Synchronization

/// Connects Herald to a local `NotificationCenter`, so that code written against `NotificationCenter.default`
/// (`notifications(named:)`, `addObserver(forName:)`, `post(name:)`) works across processes unchanged.
///
/// ```swift
/// let bridge = HeraldBridge(herald: try await Herald.connect())
/// try await bridge.importing("session.*")       // Herald → NotificationCenter.default
/// bridge.exporting(Notification.Name("chat.typing"))  // NotificationCenter.default → Herald
/// ```
///
/// An imported notification is posted with the Herald name as its `Notification.Name`, the payload's JSON object
/// as its `userInfo` (strings, numbers as `Int` or `Double`, `Bool`, `NSNull`, arrays and dictionaries), the bridge
/// as its `object`, and the whole ``HeraldNotification`` under ``notificationKey``.
///
/// Loops are prevented both ways: a notification imported from Herald (by any bridge) is never exported back, and
/// an exported post that comes back from the daemon through this bridge's own imports is not posted locally again.
///
/// ``cancel()`` (or releasing the bridge) stops both directions and removes every observer it added.
public final class HeraldBridge: Sendable {
    /// The `userInfo` key under which an imported notification carries its ``HeraldNotification``.
    public static let notificationKey = "HeraldBridge.notification"

    /// The Herald connection the bridge posts to and subscribes on.
    public let herald: Herald
    /// The local center the bridge posts to and observes.
    public let center: NotificationCenter

    private struct State {
        var tasks: [Task<Void, Never>] = []
        var observers: [ObserverToken] = []
        var exportQueues: [AsyncStream<[UInt8]>.Continuation] = []
        /// Exports on their way through the daemon, by name and payload: their echo is not imported.
        var inFlight: [String: Int] = [:]
        var cancelled = false
    }

    private let state = Mutex(State())

    /// Creates a bridge; it does nothing until ``importing(_:)`` or ``exporting(_:retain:)``.
    ///
    /// - Parameters:
    ///   - herald: the connection to use.
    ///   - center: the local center; `.default` when omitted.
    public init(herald: Herald, center: NotificationCenter = .default) {
        self.herald = herald
        self.center = center
    }

    deinit {
        stop()
    }

    /// Re-posts Herald notifications matching `pattern` into the center.
    ///
    /// After this returns the subscription is live: every post the daemon processes from then on is re-posted.
    /// Retained values of matching names are re-posted first. Library notices (`herald.dropped`) are not.
    ///
    /// - Parameter pattern: a Herald pattern, e.g. `session.*`.
    /// - Returns: the bridge, to chain calls.
    /// - Throws: as ``Herald/notifications(matching:bufferingPolicy:)``, or ``HeraldError/Code/cancelled`` when the
    ///   bridge was cancelled.
    @discardableResult
    public func importing(_ pattern: String) async throws(HeraldError) -> HeraldBridge {
        let notifications = try await herald.notifications(matching: pattern)
        let task = Task { [weak self] in
            for await notification in notifications {
                guard notification.notice == nil, let self else { continue }
                self.repost(notification)
            }
        }
        try register(task)
        return self
    }

    /// Forwards local posts of `name` to Herald, in the order they were posted.
    ///
    /// The `userInfo` becomes the JSON payload: `String` keys with string, number, `Bool`, `NSNull`, array and
    /// dictionary values; other values are left out. Notifications the bridge imported are not forwarded.
    ///
    /// - Parameters:
    ///   - name: the local name; it must be a valid Herald name, e.g. `chat.typing`.
    ///   - retain: also store each payload as the name's retained value.
    /// - Returns: the bridge, to chain calls.
    /// - Throws: ``HeraldError/Code/invalidName`` or ``HeraldError/Code/reservedName``, or
    ///   ``HeraldError/Code/cancelled`` when the bridge was cancelled.
    @discardableResult
    public func exporting(_ name: Notification.Name, retain: Bool = false) throws(HeraldError) -> HeraldBridge {
        do {
            try Name.validate(name.rawValue)
        } catch {
            throw HeraldError(.invalidName, error.reason)
        }
        if Name.isReserved(name.rawValue) {
            throw HeraldError(.reservedName, "cannot export \(name.rawValue): names under 'herald.' are reserved")
        }
        let herald = herald
        let (queue, continuation) = AsyncStream.makeStream(of: [UInt8].self, bufferingPolicy: .bufferingOldest(4096))
        let token = center.addObserver(forName: name, object: nil, queue: nil) { notification in
            guard let payload = Self.exportablePayload(notification) else { return }
            continuation.yield(payload)
        }
        let observer = ObserverToken(token)
        // One task per exported name posts in order; a Task per notification could reorder them.
        let task = Task { [weak self] in
            for await payload in queue {
                self?.expectEcho(name: name.rawValue, payload: payload)
                do throws(HeraldError) {
                    try await herald.post(name.rawValue, payload: payload, retain: retain)
                } catch {
                    self?.forgetEcho(name: name.rawValue, payload: payload)
                    if error.code == .invalidName || error.code == .reservedName || error.code == .payloadTooLarge {
                        continue
                    }
                    return
                }
            }
        }
        do throws(HeraldError) {
            try register(task, observer: observer, queue: continuation)
        } catch {
            if let token = observer.take() { center.removeObserver(token) }
            throw error
        }
        return self
    }

    /// Stops both directions: unsubscribes every import, removes every observer, and waits for the bridge's tasks
    /// to end. Idempotent.
    public func cancel() async {
        let tasks = stop()
        for task in tasks { await task.value }
    }

    /// How many observers the bridge has registered with the center and not removed (for tests).
    var observerCount: Int {
        state.withLock { state in state.observers.filter(\.isHeld).count }
    }

    // MARK: Internals

    @discardableResult
    private func stop() -> [Task<Void, Never>] {
        let (tasks, observers, queues) = state.withLock { state in
            state.cancelled = true
            defer {
                state.tasks = []
                state.observers = []
                state.exportQueues = []
            }
            return (state.tasks, state.observers, state.exportQueues)
        }
        for observer in observers {
            if let token = observer.take() { center.removeObserver(token) }
        }
        for queue in queues { queue.finish() }
        for task in tasks { task.cancel() }
        return tasks
    }

    private func register(
        _ task: Task<Void, Never>,
        observer: ObserverToken? = nil,
        queue: AsyncStream<[UInt8]>.Continuation? = nil
    ) throws(HeraldError) {
        let accepted = state.withLock { state in
            guard !state.cancelled else { return false }
            state.tasks.append(task)
            if let observer { state.observers.append(observer) }
            if let queue { state.exportQueues.append(queue) }
            return true
        }
        if !accepted {
            task.cancel()
            queue?.finish()
            throw HeraldError(.cancelled, "the HeraldBridge was cancelled")
        }
    }

    private func repost(_ notification: HeraldNotification) {
        if consumeEcho(name: notification.name, payload: notification.payload, sender: notification.sender) {
            return
        }
        var userInfo: [AnyHashable: Any] = [:]
        for (key, value) in notification.userInfo ?? [:] {
            userInfo[key] = Self.foundationValue(value)
        }
        userInfo[Self.notificationKey] = notification
        center.post(name: Notification.Name(notification.name), object: self, userInfo: userInfo)
    }

    private static func echoKey(_ name: String, _ payload: [UInt8]) -> String {
        name + "\u{0}" + String(decoding: payload, as: UTF8.self)
    }

    private func expectEcho(name: String, payload: [UInt8]) {
        let key = Self.echoKey(name, payload)
        state.withLock { $0.inFlight[key, default: 0] += 1 }
    }

    private func forgetEcho(name: String, payload: [UInt8]) {
        _ = consumeEcho(name: name, payload: payload, sender: nil)
    }

    /// Whether `name` with `payload` is this bridge's own export coming back; if so, it is crossed off.
    private func consumeEcho(name: String, payload: [UInt8], sender: HeraldNotification.Sender?) -> Bool {
        if let sender, sender.pid != ProcessIdentity.currentPID() { return false }
        let key = Self.echoKey(name, payload)
        return state.withLock { state in
            guard let count = state.inFlight[key] else { return false }
            state.inFlight[key] = count > 1 ? count - 1 : nil
            return true
        }
    }

    /// The JSON payload for a local notification, or nil when the bridge must not export it (it was imported).
    static func exportablePayload(_ notification: Notification) -> [UInt8]? {
        if notification.userInfo?[notificationKey] != nil { return nil }
        var object: [String: JSONValue] = [:]
        for (key, value) in notification.userInfo ?? [:] {
            guard let key = key.base as? String, let json = jsonValue(value) else { continue }
            object[key] = json
        }
        return JSONValue.encodeObject(object)
    }

    /// A Foundation value as JSON, or nil for a value JSON cannot hold.
    static func jsonValue(_ value: Any) -> JSONValue? {
        switch value {
        case let value as JSONValue: return value
        case let value as String: return .string(value)
        case let value as Bool: return .bool(value)
        case let value as Int: return .number(Double(value))
        case let value as Double: return .number(value)
        case let value as Float: return .number(Double(value))
        case let value as Int64: return .number(Double(value))
        case let value as UInt64: return .number(Double(value))
        case let value as Int32: return .number(Double(value))
        case is NSNull: return .null
        case let value as Date: return .string(value.formatted(.iso8601))
        case let value as [Any]: return .array(value.compactMap(jsonValue))
        case let value as [String: Any]: return .object(value.compactMapValues(jsonValue))
        default: return nil
        }
    }

    /// A JSON value as the Foundation value `userInfo` consumers expect.
    static func foundationValue(_ value: JSONValue) -> Any {
        switch value {
        case .null: return NSNull()
        case .bool(let value): return value
        case .number(let value):
            if let integer = JSONValue.exactInteger(value), let small = Int(exactly: integer) { return small }
            return value
        case .string(let value): return value
        case .array(let values): return values.map(foundationValue)
        case .object(let members): return members.mapValues(foundationValue)
        }
    }
}
