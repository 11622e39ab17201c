import HeraldCore
import HeraldDBus
import HeraldDBusClient
import HeraldDesktop

extension DBusBridge {
    /// Carries out one event.
    func handle(_ event: Event) async {
        switch event {
        case .connected(let bus, let client):
            clients[bus] = client
            await refreshAll(on: bus)
            await firstReadingEnded(bus)
        case .busConnection(let bus, let connected):
            // Said in bridge.dbus (posted after this batch). The return is handled by whichever comes first of this
            // and NameAcquired; both follow the client's Hello and restored matches.
            if connected {
                await busReturned(bus)
            } else {
                awayBuses.insert(bus)
                logger.warning("the \(bus.rawValue) bus went away: reconnecting with backoff")
            }
        case .unreachable(let bus):
            await firstReadingEnded(bus)
        case .signal(let route, let message):
            await signal(route, message)
        case .notify(let payload):
            await show(payload)
        case .sessionStateAnnounced(let payload):
            guard case .object(let object)? = JSONValue.decode(payload), let text = object["state"]?.stringValue,
                let announced = SessionLock.State(rawValue: text)
            else { return }
            logger.info("session.state \(text) was announced by another process (herald-session-hook?)")
            _ = lock.stateAnnounced(announced)
        case .lockTimeout(let token):
            let output = lock.lockRequestExpired(token)
            if let line = output.log { logger.notice(line) }
        case .heraldReconnected:
            logger.notice("heraldd is back: posting every source's state again")
            lock = SessionLock(user: user)
            sleep = SystemSleep()
            idle = SessionIdle()
            battery = Battery()
            network = Network()
            players = MediaPlayers()
            for bus in Bus.allCases { await refreshAll(on: bus) }
            await post(lock.start(at: now()).update)
            lastState = [:]
        case .heraldEnded:
            break
        }
    }

    /// The first reading of `bus` is done (or the bus is not there yet): once both are, a lock change is announced.
    func firstReadingEnded(_ bus: Bus) async {
        guard unreadBuses.remove(bus) != nil, unreadBuses.isEmpty else { return }
        await post(lock.start(at: now()).update)
        firstReadingDone = true
    }

    /// Says, once, that every source was read and its state posted: after the batch's posts are made.
    func announceFirstReading() {
        guard firstReadingDone, !firstReadingAnnounced else { return }
        firstReadingAnnounced = true
        let active = state()["sources"].flatMap { value -> [String]? in
            guard case .object(let sources) = value else { return nil }
            return sources.keys.sorted().filter { sources[$0] == .bool(true) }
        }
        logger.notice("every source read: \((active ?? []).joined(separator: ", ")) active")
    }

    /// Reads who owns every followed name on `bus`, and the state of every service there: at start, after the bus
    /// came back, after a resume, after signals were dropped.
    func refreshAll(on bus: Bus) async {
        guard let client = clients[bus] else { return }
        var names = Self.services(on: bus)
        if bus == .session {
            do {
                let listed = try await client.listNames()
                names += listed.filter { $0.hasPrefix(MediaPlayers.busNamePrefix) }
            } catch {
                recordError("cannot list the session bus's names: \(error)")
            }
            names += players.busNames.filter { !names.contains($0) }
        }
        for name in names {
            let owner: String?
            do {
                owner = try await client.nameOwner(of: name)
            } catch {
                recordError("cannot ask who owns \(name): \(error)")
                continue
            }
            await ownerChanged(name, owner, on: bus, force: true)
        }
    }

    /// `name` is now owned by `owner` (nil: it left). `force` reads the service even if its owner did not change.
    func ownerChanged(_ name: String, _ owner: String?, on bus: Bus, force: Bool) async {
        let previous = owners[name]
        if !force && previous == owner { return }
        owners[name] = owner
        if previous != nil, owner == nil {
            logger.notice("\(name) left the \(bus.rawValue) bus")
        } else if previous == nil, owner != nil, !force || name.hasPrefix(MediaPlayers.busNamePrefix) {
            logger.notice("\(name) appeared on the \(bus.rawValue) bus")
        }
        let time = now()
        switch name {
        case Self.login1:
            if owner == nil {
                if previous != nil || force { await post(lock.logindLeft(at: time).update) }
                await post(idle.serviceLeft())
                if !saidAbsent.contains(name) {
                    saidAbsent.insert(name)
                    logger.notice("no logind on the system bus: no LockedHint, Lock, idle or sleep from it")
                }
            } else {
                saidAbsent.remove(name)
                await readLogind()
            }
        case Self.upower:
            if owner == nil {
                await post(battery.serviceLeft())
                if !saidAbsent.contains(name) {
                    saidAbsent.insert(name)
                    logger.notice("no UPower on the system bus: no power.battery")
                }
            } else {
                saidAbsent.remove(name)
                await readBattery()
            }
        case Self.networkManager:
            if owner == nil {
                await post(network.serviceLeft())
                if !saidAbsent.contains(name) {
                    saidAbsent.insert(name)
                    logger.notice("no NetworkManager on the system bus: no network.state")
                }
            } else {
                saidAbsent.remove(name)
                await readNetwork()
            }
        case Self.notifications:
            if owner == nil, !saidAbsent.contains(name) {
                saidAbsent.insert(name)
                logger.notice("no notification server on the session bus: posts to notify.desktop are not shown")
            } else if owner != nil {
                saidAbsent.remove(name)
            }
        default:
            if let saver = Self.screenSavers.first(where: { $0.name == name }) {
                if owner == nil {
                    await post(lock.screenSaverLeft(saver.key, at: time).update)
                } else {
                    await readScreenSaver(saver)
                }
            } else if name.hasPrefix(MediaPlayers.busNamePrefix) {
                if owner == nil {
                    await post(players.playerLeft(name))
                } else {
                    await readPlayer(name)
                }
            }
        }
    }

    /// Reads all properties of `interface`, or records why not.
    func readAll(_ bus: Bus, _ destination: String, _ path: String, _ interface: String) async -> [String: DBusValue]? {
        guard let client = clients[bus] else { return nil }
        do {
            return try await client.properties(of: interface, at: path, on: destination)
        } catch {
            recordError("cannot read \(interface) of \(destination) \(path): \(error)")
            return nil
        }
    }

    func readLogind() async {
        if let manager = await readAll(
            .system,
            Self.login1,
            "/org/freedesktop/login1",
            "org.freedesktop.login1.Manager"
        ) {
            await post(sleep.managerPropertiesChanged(manager).update)
        }
        guard let sessionPath else { return }
        if let session = await readAll(.system, Self.login1, sessionPath, "org.freedesktop.login1.Session") {
            await post(lock.sessionPropertiesChanged(session, at: now()).update)
            await post(idle.sessionPropertiesChanged(session))
        }
    }

    func readBattery() async {
        let manager = await readAll(.system, Self.upower, "/org/freedesktop/UPower", "org.freedesktop.UPower")
        let device = await readAll(.system, Self.upower, Self.displayDevice, "org.freedesktop.UPower.Device")
        await post(battery.read(manager: manager ?? [:], device: device ?? [:]))
    }

    func readNetwork() async {
        let path = "/org/freedesktop/NetworkManager"
        if let properties = await readAll(.system, Self.networkManager, path, "org.freedesktop.NetworkManager") {
            await post(network.propertiesChanged(properties))
        }
    }

    func readScreenSaver(_ saver: ScreenSaver) async {
        guard let client = clients[.session] else { return }
        do {
            let body = try await client.call(
                destination: saver.name,
                path: saver.path,
                interface: saver.interface,
                member: "GetActive"
            )
            guard case .boolean(let active)? = body.first else {
                await refuse(["\(saver.interface).GetActive must answer 'b', not '\(body)'"])
                return
            }
            await post(lock.screenSaverChanged(saver.key, active: active, at: now()).update)
        } catch {
            // A screen saver that does not answer GetActive (KDE's at the other path) still sends ActiveChanged.
            logger.debug("\(saver.name) does not answer GetActive at \(saver.path): \(error)")
        }
    }

    func readPlayer(_ name: String) async {
        let properties =
            await readAll(.session, name, "/org/mpris/MediaPlayer2", "org.mpris.MediaPlayer2.Player") ?? [:]
        await post(players.playerChanged(name, properties))
    }

    /// The bus name a signal's unique sender owns, among the followed ones.
    func ownedName(of sender: String?, prefix: String) -> String? {
        guard let sender else { return nil }
        return owners.first { $0.value == sender && $0.key.hasPrefix(prefix) }?.key
    }

    /// A bus that went away is back: everything on it is read again, once per return.
    func busReturned(_ bus: Bus) async {
        guard awayBuses.remove(bus) != nil else { return }
        reconnections[bus, default: 0] += 1
        logger.notice("the \(bus.rawValue) bus is back: reading every source on it again")
        await refreshAll(on: bus)
    }

    /// One signal, through the route it came by.
    func signal(_ route: Route, _ message: DBusMessage) async {
        let time = now()
        switch route {
        case .nameAcquired(let bus):
            // The bus sends NameAcquired for our unique name after each Hello: after the first one, a reconnection.
            guard case .string(let name)? = message.body.first, name.hasPrefix(":"), clients[bus] != nil else { return }
            await busReturned(bus)
        case .nameOwner(let bus):
            guard message.body.count == 3, let name = message.body[0].stringValue,
                let new = message.body[2].stringValue
            else { return }
            await ownerChanged(name, new.isEmpty ? nil : new, on: bus, force: false)
        case .sessionProperties:
            guard let change = DBusClient.PropertiesChange(message) else { return }
            await post(lock.sessionPropertiesChanged(change.changed, at: time).update)
            await post(idle.sessionPropertiesChanged(change.changed))
        case .sessionRequest:
            if message.member == "Lock" {
                let output = lock.lockRequested()
                if let token = output.armLockTimeout {
                    logger.info("logind asks to lock the session: waiting for the locker's answer")
                    armLockTimeout(token)
                }
            } else if message.member == "Unlock" {
                _ = lock.unlockRequested()
            }
        case .prepareForSleep:
            guard case .boolean(let start)? = message.body.first else {
                await refuse(["org.freedesktop.login1.Manager.PrepareForSleep must carry 'b'"])
                return
            }
            let output = sleep.prepareForSleep(start)
            await post(output.update)
            if output.rereadAll {
                logger.notice("the system woke up: reading every source again")
                for bus in Bus.allCases { await refreshAll(on: bus) }
            }
        case .managerProperties:
            guard let change = DBusClient.PropertiesChange(message) else { return }
            await post(sleep.managerPropertiesChanged(change.changed).update)
        case .upowerDevice:
            guard let change = DBusClient.PropertiesChange(message) else { return }
            await post(battery.displayDeviceChanged(change.changed))
        case .upowerManager:
            guard let change = DBusClient.PropertiesChange(message) else { return }
            await post(battery.managerChanged(change.changed))
        case .networkProperties:
            guard let change = DBusClient.PropertiesChange(message) else { return }
            await post(network.propertiesChanged(change.changed))
        case .networkState:
            await post(network.stateChanged(message.body))
        case .screenSaver:
            guard let interface = message.interface, let path = message.path else { return }
            guard case .boolean(let active)? = message.body.first else {
                await refuse(["\(interface).ActiveChanged must carry 'b'"])
                return
            }
            await post(lock.screenSaverChanged("\(interface) \(path)", active: active, at: time).update)
        case .notifications:
            guard let id = DesktopNotification.id(in: message.body), shownNotifications.contains(id) else { return }
            if message.member == "ActionInvoked", let post = DesktopNotification.actionInvoked(message.body) {
                await self.post(SourceUpdate(posts: [post]))
            } else if message.member == "NotificationClosed", let post = DesktopNotification.closed(message.body) {
                shownNotifications.removeAll { $0 == id }
                await self.post(SourceUpdate(posts: [post]))
            }
        case .players:
            guard let change = DBusClient.PropertiesChange(message),
                let name = ownedName(of: message.sender, prefix: MediaPlayers.busNamePrefix)
            else { return }
            await post(players.playerChanged(name, change.changed))
        }
    }

    /// Shows a `notify.desktop` post: `org.freedesktop.Notifications.Notify`, and no other method.
    func show(_ payload: [UInt8]) async {
        guard let json = JSONValue.decode(payload) else {
            await refuse(["notify.desktop: the payload is not JSON"])
            return
        }
        let notification: DesktopNotification
        do {
            notification = try DesktopNotification(json.dbusJSON)
        } catch {
            await refuse([error.reason])
            return
        }
        guard let client = clients[.session] else {
            recordError("notify.desktop: no session bus to show '\(notification.summary)' on")
            return
        }
        do {
            let body = try await client.call(
                destination: Self.notifications,
                path: "/org/freedesktop/Notifications",
                interface: Self.notifications,
                member: "Notify",
                notification.notifyArguments(appName: "herald")
            )
            if case .uint32(let id)? = body.first {
                shownNotifications.append(id)
                if shownNotifications.count > 1024 { shownNotifications.removeFirst() }
                if options.verbose { logger.info("showed notification \(id): \(notification.summary)") }
            }
        } catch {
            recordError("cannot show the notification '\(notification.summary)': \(error)")
        }
    }
}

extension JSONValue {
    /// The same value as the D-Bus codec's JSON.
    var dbusJSON: DBusJSON {
        switch self {
        case .null: .null
        case .bool(let flag): .bool(flag)
        case .number(let number): .number(number)
        case .string(let text): .string(text)
        case .array(let items): .array(items.map(\.dbusJSON))
        case .object(let object): .object(object.mapValues(\.dbusJSON))
        }
    }
}

extension DBusJSON {
    /// The same value as Herald's JSON.
    var heraldJSON: JSONValue {
        switch self {
        case .null: .null
        case .bool(let flag): .bool(flag)
        case .number(let number): .number(number)
        case .string(let text): .string(text)
        case .array(let items): .array(items.map(\.heraldJSON))
        case .object(let object): .object(object.mapValues(\.heraldJSON))
        }
    }
}
