import ChatCore
import Herald
import Synchronization

/// Tells the room when the user walks away from the desktop and comes back, from the session's notifications in
/// heraldd: the desktop counterpart of Blabber's `willResignActive` / `didBecomeActive` observers.
struct PresenceReporter: Sendable {
    var user: String
    var socket: String?
    var sender: Sender
    var output: Output

    /// Observes until the task is cancelled or heraldd goes away. Without heraldd, prints one notice and returns.
    func run() async {
        let path = socket.flatMap { $0.isEmpty ? nil : $0 } ?? Herald.defaultSocketPath
        let herald: Herald
        do {
            herald = try await Herald.connect(socketPath: path, options: Herald.Options(clientName: "herald-chat"))
        } catch {
            output.notice("presence is off: heraldd is not reachable at \(path) (\(error.message))")
            return
        }
        do {
            // Both subscriptions are live before the retained state is read, so no transition falls in between.
            let resigned = try await follow("session.willResignActive", on: herald)
            let activated = try await follow("session.didBecomeActive", on: herald)
            if resigned == nil, activated == nil {
                output.notice("presence is off: neither session subscription was accepted")
                await herald.close()
                return
            }
            let retained: HeraldNotification?
            do {
                retained = try await herald.retainedValue(of: "session.state")
            } catch let error where error.code == .refused {
                // A daemon that refuses the question still delivers the transitions: start from "active".
                output.notice("presence: heraldd refused to read session.state (\(error.message))")
                retained = nil
            }
            let tracker = Tracker(user: user)
            tracker.start(retained?.userInfo?["state"]?.stringValue, sequence: retained?.sequence ?? 0)
            output.notice(
                "presence is on: following the session through heraldd at \(path)"
                    + (tracker.isAway ? " (the session is away)" : "")
            )
            // Two loops, as in the book: each waits on its own sequence, so they must run in parallel.
            await withTaskGroup(of: Void.self) { group in
                if let resigned { group.addTask { await follow(resigned, as: .away, tracker) } }
                if let activated { group.addTask { await follow(activated, as: .active, tracker) } }
            }
            if !Task.isCancelled {
                output.notice("presence is off: heraldd went away")
            }
        } catch {
            output.notice("presence is off: \(error.message)")
        }
        await herald.close()
    }

    /// Subscribes to `name`; a refusal (heraldd's subscription limit reached) is noticed and the other transition is
    /// still followed, as the connection and its other subscriptions go on.
    ///
    /// - Returns: the notifications, or nil when heraldd refused the subscription.
    /// - Throws: `HeraldError` when the connection failed.
    private func follow(_ name: String, on herald: Herald) async throws(HeraldError) -> HeraldNotifications? {
        do throws(HeraldError) {
            return try await herald.notifications(matching: name)
        } catch let error where error.code == .refused || error.code == .tooManySubscriptions {
            // tooManySubscriptions is the library's own check of heraldd's limit from WELCOME: the same answer,
            // given before the request is sent.
            output.notice("presence: cannot follow \(name) (\(error.message))")
            return nil
        }
    }

    private func follow(_ notifications: HeraldNotifications, as presence: Presence, _ tracker: Tracker) async {
        for await notification in notifications where notification.notice == nil {
            if let text = tracker.changed(to: presence, sequence: notification.sequence) {
                // Dated by heraldd's time of the session event, the same in every client of this session: the server
                // keeps the newest announcement of each user, whichever client's arrives first.
                await sender.say(text, system: true, date: notification.time)
            }
        }
    }

    /// The pure ``PresenceTracker`` shared by the two loops.
    private final class Tracker: Sendable {
        private let state: Mutex<PresenceTracker>

        init(user: String) {
            state = Mutex(PresenceTracker(user: user))
        }

        var isAway: Bool {
            state.withLock { $0.state == .away }
        }

        func start(_ retained: String?, sequence: UInt64) {
            state.withLock { $0.started(retainedState: retained, sequence: sequence) }
        }

        func changed(to presence: Presence, sequence: UInt64) -> String? {
            state.withLock { $0.sessionChanged(to: presence, sequence: sequence) }
        }
    }
}
