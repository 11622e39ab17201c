import HeraldDBus
import HeraldDBusClient
import HeraldDesktop
import HeraldPosix

extension DBusBridge {
    /// Connects to `bus` in a task of its own, with backoff while the bus is not there, subscribes to its signals and
    /// hands the client to the loop. Once connected, the client reconnects by itself and restores the subscriptions.
    func startConnecting(_ bus: Bus) {
        let environment = self.environment
        let logger = self.logger
        let mailbox = self.mailbox
        let rules = self.rules(on: bus)
        let herald = self.herald
        Task(executorPreference: herald.taskExecutor) {
            var options = DBusClient.Options()
            options.logger = logger
            options.callTimeout = .seconds(5)
            var delay = Duration.milliseconds(100)
            var said = false
            while true {
                do {
                    let client =
                        switch bus {
                        case .session: try await DBusClient.session(environment: environment, options: options)
                        case .system: try await DBusClient.system(environment: environment, options: options)
                        }
                    for (route, rule) in rules {
                        let signals = try await client.signals(matching: rule)
                        Task(executorPreference: herald.taskExecutor) {
                            var dropped = 0
                            for await message in signals {
                                mailbox.deliver(.signal(route, message), isSignal: true)
                                let count = signals.droppedCount
                                if count != dropped {
                                    dropped = count
                                    mailbox.overflowed.store(true, ordering: .relaxed)
                                }
                            }
                        }
                    }
                    let changes = client.connectionChanges()
                    Task(executorPreference: herald.taskExecutor) {
                        for await connected in changes { mailbox.deliver(.busConnection(bus, connected)) }
                    }
                    logger.notice("connected to the \(bus.rawValue) bus; \(rules.count) matches set")
                    mailbox.deliver(.connected(bus, client))
                    return
                } catch {
                    if !said {
                        logger.warning("cannot connect to the \(bus.rawValue) bus: \(error); retrying with backoff")
                        said = true
                        mailbox.deliver(.unreachable(bus))
                    }
                    await DBusBridge.pause(delay)
                    delay = min(delay * 2, .seconds(30))
                }
            }
        }
    }

    /// Waits `duration` on a thread of its own: Task.sleep would start the global executor's timer, and with it
    /// libdispatch's workqueue monitor, which then wakes the process every second for good.
    static func pause(_ duration: Duration) async {
        let nanoseconds = nanoseconds(duration)
        await withCheckedContinuation { (resume: CheckedContinuation<Void, Never>) in
            DetachedThread.start(name: "dbus-backoff") {
                SystemClock.sleep(nanoseconds: nanoseconds)
                resume.resume()
            }
        }
    }

    /// Ends the Lock request `token` after `duration`, on a thread of its own (see ``pause(_:)``).
    func armLockTimeout(_ token: Int) {
        let mailbox = self.mailbox
        let duration = options.lockTimeout
        let nanoseconds = Self.nanoseconds(duration)
        DetachedThread.start(name: "dbus-lock-timer") {
            SystemClock.sleep(nanoseconds: nanoseconds)
            mailbox.deliver(.lockTimeout(token))
        }
    }

    /// `duration` in whole nanoseconds for ``SystemClock/sleep(nanoseconds:)``: 0 when negative, and capped where
    /// `UInt64` ends (585 years).
    static func nanoseconds(_ duration: Duration) -> UInt64 {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0, attoseconds >= 0 else { return 0 }
        let (whole, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? .max : whole.addingReportingOverflow(UInt64(attoseconds / 1_000_000_000)).partialValue
    }

    /// The signals followed on `bus`, each with its route.
    func rules(on bus: Bus) -> [(Route, MatchRule)] {
        var rules: [(Route, MatchRule?)] = []
        func changes(_ sender: String?, _ path: String, _ interface: String) -> MatchRule? {
            try? MatchRule(
                sender: sender,
                interface: "org.freedesktop.DBus.Properties",
                member: "PropertiesChanged",
                path: path,
                arguments: [0: interface]
            )
        }
        rules.append(
            (
                .nameAcquired(bus),
                try? MatchRule(
                    sender: "org.freedesktop.DBus",
                    interface: "org.freedesktop.DBus",
                    member: "NameAcquired"
                )
            )
        )
        for name in Self.services(on: bus) {
            rules.append((.nameOwner(bus), Self.nameOwnerRule(arguments: [0: name])))
        }
        switch bus {
        case .system:
            if let sessionPath {
                rules.append((.sessionProperties, changes(Self.login1, sessionPath, "org.freedesktop.login1.Session")))
                rules.append(
                    (
                        .sessionRequest,
                        try? MatchRule(
                            sender: Self.login1,
                            interface: "org.freedesktop.login1.Session",
                            path: sessionPath
                        )
                    )
                )
            }
            rules.append(
                (
                    .prepareForSleep,
                    try? MatchRule(
                        sender: Self.login1,
                        interface: "org.freedesktop.login1.Manager",
                        member: "PrepareForSleep"
                    )
                )
            )
            rules.append(
                (.managerProperties, changes(Self.login1, "/org/freedesktop/login1", "org.freedesktop.login1.Manager"))
            )
            rules.append((.upowerDevice, changes(Self.upower, Self.displayDevice, "org.freedesktop.UPower.Device")))
            rules.append((.upowerManager, changes(Self.upower, "/org/freedesktop/UPower", "org.freedesktop.UPower")))
            rules.append(
                (
                    .networkProperties,
                    changes(Self.networkManager, "/org/freedesktop/NetworkManager", "org.freedesktop.NetworkManager")
                )
            )
            rules.append(
                (
                    .networkState,
                    try? MatchRule(
                        sender: Self.networkManager,
                        interface: "org.freedesktop.NetworkManager",
                        member: "StateChanged",
                        path: "/org/freedesktop/NetworkManager"
                    )
                )
            )
        case .session:
            rules.append((.nameOwner(bus), Self.nameOwnerRule(namespace: "org.mpris.MediaPlayer2")))
            // By interface and member, not by sender: KDE sends org.freedesktop.ScreenSaver from /ScreenSaver under
            // its own name, and a locker may send it from a connection that owns no name at all.
            for interface in Set(Self.screenSavers.map(\.interface)).sorted() {
                rules.append((.screenSaver, try? MatchRule(interface: interface, member: "ActiveChanged")))
            }
            rules.append((.notifications, try? MatchRule(sender: Self.notifications, interface: Self.notifications)))
            rules.append((.players, changes(nil, "/org/mpris/MediaPlayer2", "org.mpris.MediaPlayer2.Player")))
        }
        return rules.compactMap { route, rule in rule.map { (route, $0) } }
    }

    static func nameOwnerRule(arguments: [Int: String] = [:], namespace: String? = nil) -> MatchRule? {
        try? MatchRule(
            sender: "org.freedesktop.DBus",
            interface: "org.freedesktop.DBus",
            member: "NameOwnerChanged",
            path: "/org/freedesktop/DBus",
            arguments: arguments,
            argument0Namespace: namespace
        )
    }
}
