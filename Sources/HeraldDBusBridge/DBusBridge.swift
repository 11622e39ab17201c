public import HeraldCore
import HeraldDBus
import HeraldDBusClient
import HeraldDesktop
public import HeraldPosix
import Synchronization

/// The bridge between the desktop's two D-Bus buses and one Herald daemon.
///
/// Every input (a signal, a service coming or going, a bus connected again, a `notify.desktop` post, a Lock request's
/// timeout) becomes one ``Event`` in one ``Mailbox`` that one loop takes in batches; the loop owns the sources' state
/// (HeraldDesktop's pure values) and makes their posts at the end of each batch. Nothing runs on a timer: an idle
/// bridge waits in the D-Bus clients' poll(2) and in Herald's reader, and its tasks run on `herald.taskExecutor` or
/// on the executor the bridge was started on (``DBusBridgeMain/start(arguments:)``), never on the global executor.
public final class DBusBridge {
    /// Which bus.
    public enum Bus: String, Sendable, CaseIterable {
        case session
        case system
    }

    /// Which subscription a signal came through.
    enum Route: Sendable {
        case sessionProperties
        case sessionRequest
        case prepareForSleep
        case managerProperties
        case upowerDevice
        case upowerManager
        case networkProperties
        case networkState
        case screenSaver
        case notifications
        case players
        case nameAcquired(Bus)
        case nameOwner(Bus)
    }

    enum Event: Sendable {
        case connected(Bus, DBusClient)
        /// The client lost its bus (false) or made it again (true).
        case busConnection(Bus, Bool)
        /// The first attempt to connect to the bus failed; the bridge keeps trying.
        case unreachable(Bus)
        case signal(Route, DBusMessage)
        case notify([UInt8])
        /// Another process posted `session.state` (herald-session-hook lock|unlock).
        case sessionStateAnnounced([UInt8])
        case lockTimeout(Int)
        /// heraldd restarted: its retained values may be gone, so every name is posted again.
        case heraldReconnected
        case heraldEnded(String)
    }

    /// A screen saver service: its bus name, object path and interface.
    struct ScreenSaver: Sendable {
        var name: String
        var path: String
        var interface: String
        var key: String { "\(interface) \(path)" }
    }

    /// The five screen-saver services whose `ActiveChanged` says the screen is locked or blanked.
    static let screenSavers = [
        ScreenSaver(
            name: "org.freedesktop.ScreenSaver",
            path: "/org/freedesktop/ScreenSaver",
            interface: "org.freedesktop.ScreenSaver"
        ),
        ScreenSaver(name: "org.gnome.ScreenSaver", path: "/org/gnome/ScreenSaver", interface: "org.gnome.ScreenSaver"),
        ScreenSaver(name: "org.kde.screensaver", path: "/ScreenSaver", interface: "org.freedesktop.ScreenSaver"),
        ScreenSaver(name: "org.mate.ScreenSaver", path: "/org/mate/ScreenSaver", interface: "org.mate.ScreenSaver"),
        ScreenSaver(
            name: "org.cinnamon.ScreenSaver",
            path: "/org/cinnamon/ScreenSaver",
            interface: "org.cinnamon.ScreenSaver"
        ),
    ]

    static let login1 = "org.freedesktop.login1"
    static let upower = "org.freedesktop.UPower"
    static let networkManager = "org.freedesktop.NetworkManager"
    static let notifications = "org.freedesktop.Notifications"
    static let displayDevice = "/org/freedesktop/UPower/devices/DisplayDevice"

    /// The names followed on each bus, besides the MPRIS players.
    static func services(on bus: Bus) -> [String] {
        switch bus {
        case .system: [login1, upower, networkManager]
        case .session: [notifications] + screenSavers.map(\.name)
        }
    }

    let options: DBusBridgeOptions
    let herald: Herald
    let logger: Logger
    let environment: [String: String]
    let user: String
    /// logind's object path of this session, or nil when there is no session id.
    let sessionPath: String?

    /// Every input, for the loop; when a signal was dropped for a full mailbox the loop reads everything again.
    let mailbox = Mailbox<Event>()
    /// The posts of the batch being handled, made when it ends (``flushPosts()``).
    var pendingPosts: [DesktopPost] = []

    var clients: [Bus: DBusClient] = [:]
    /// The owner of each followed name, by bus.
    var owners: [String: String] = [:]
    var lock: SessionLock
    var sleep = SystemSleep()
    var idle = SessionIdle()
    var battery = Battery()
    var network = Network()
    var players = MediaPlayers()
    /// The notifications this bridge showed, whose actions and closing it reports; the newest 1024.
    var shownNotifications: [UInt32] = []

    var posted: UInt64 = 0
    var refused: UInt64 = 0
    var errors: UInt64 = 0
    var lastError: String?
    var reconnections: [Bus: Int] = [:]
    /// The buses that went away and whose return has not been handled yet: the first `NameAcquired` of a connection
    /// can reach the loop after `.connected`, and is no reconnection.
    var awayBuses: Set<Bus> = []
    var logLimiter = LogLimiter()
    var lastState: [String: JSONValue] = [:]
    var lastStateTime = ContinuousClock.now - .seconds(10)
    /// The services whose absence was logged, so it is said once.
    var saidAbsent: Set<String> = []
    /// The buses not read yet since the start.
    var unreadBuses = Set(Bus.allCases)
    var firstReadingDone = false
    var firstReadingAnnounced = false

    /// Creates a bridge on a connected Herald.
    ///
    /// - Parameter environment: where the buses' addresses, `XDG_SESSION_ID` and `USER` are read.
    public init(options: DBusBridgeOptions, herald: Herald, environment: [String: String], logger: Logger) {
        self.options = options
        self.herald = herald
        self.logger = logger
        self.environment = environment
        self.user = options.user ?? environment["USER"] ?? "unknown"
        self.lock = SessionLock(user: user)
        let id = options.sessionID ?? environment["XDG_SESSION_ID"]
        self.sessionPath = id.flatMap { $0.isEmpty ? nil : Self.logindSessionPath(id: $0) }
    }

    /// logind's object path of session `id`, escaped as sd-bus does: letters and (not leading) digits stay, every
    /// other byte becomes `_XX`.
    static func logindSessionPath(id: String) -> String {
        var escaped = ""
        for (index, byte) in id.utf8.enumerated() {
            let letter = (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
            let digit = byte >= 0x30 && byte <= 0x39
            if letter || (digit && index > 0) {
                escaped.append(Character(Unicode.Scalar(byte)))
            } else {
                escaped += "_" + String(byte, radix: 16).leftPadded(to: 2)
            }
        }
        return "/org/freedesktop/login1/session/" + escaped
    }

    /// Runs until the Herald connection is closed for good.
    ///
    /// Call it from a task with an executor preference (`withTaskExecutorPreference(herald.taskExecutor)`): on the
    /// global executor, libdispatch's worker pool would wake the process every second.
    public func run() async {
        let mailbox = self.mailbox
        let herald = self.herald
        let logger = self.logger
        Task(executorPreference: herald.taskExecutor) {
            await DBusBridge.followNotifyDesktop(
                herald: herald,
                logger: logger,
                mailbox: mailbox
            )
        }
        if sessionPath == nil {
            logger.warning(
                "no logind session id (XDG_SESSION_ID or --session-id): LockedHint, Lock and idle are not followed"
            )
        }
        for bus in Bus.allCases { startConnecting(bus) }
        await postState(force: true)
        for await _ in mailbox.wakes {
            let batch = mailbox.take()
            if mailbox.overflowed.exchange(false, ordering: .relaxed) {
                logger.warning("signals came faster than the bridge could read them: reading every source again")
                for bus in Bus.allCases { await refreshAll(on: bus) }
            }
            for event in batch {
                if case .heraldEnded(let reason) = event {
                    logger.error(reason)
                    return
                }
                await handle(event)
            }
            await flushPosts()
            announceFirstReading()
            await postState(force: false)
        }
    }

    /// Hands each post to `notify.desktop` to the loop, until the subscription ends.
    static func followNotifyDesktop(
        herald: Herald,
        logger: Logger,
        mailbox: Mailbox<Event>
    ) async {
        let posts: HeraldNotifications
        do {
            // session.state from others: herald-session-hook lock|unlock, for lockers that tell no one.
            posts = try await herald.notifications(
                matching: ["notify.desktop", "session.state"],
                excludingOwnPosts: true
            )
        } catch {
            mailbox.deliver(.heraldEnded("cannot subscribe to notify.desktop: \(error)"))
            return
        }
        logger.notice("showing the posts to notify.desktop as desktop notifications")
        for await notification in posts {
            if notification.name == HeraldNotification.reconnectedNoticeName {
                mailbox.deliver(.heraldReconnected)
                continue
            }
            if notification.notice != nil || notification.isRetained { continue }
            if notification.name == "session.state" {
                mailbox.deliver(.sessionStateAnnounced(notification.payload))
            } else {
                mailbox.deliver(.notify(notification.payload))
            }
        }
        mailbox.deliver(.heraldEnded("the subscription to notify.desktop ended"))
    }

    /// The time now, for `since`.
    func now() -> String {
        ISOTime.string(microseconds: SystemClock.realtimeNanoseconds() / 1000)
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
