public import Herald
import HeraldHTTP
public import HeraldPosix

#if os(Linux)
/// `herald dashboard`: a Herald client that serves a live view of the session on 127.0.0.1.
///
/// Two connections to heraldd: one `MONITOR`s every post (a monitoring connection may not post), the other reads
/// `NAMES`, `GET` and `STATUS` and carries out the page's posts and `PLUGIN` requests. The HTTP server runs its
/// ``HTTPServer`` loop on a thread of its own; the model between them is behind a lock (``SharedModel``).
public final class Dashboard: Sendable {
    /// What `herald dashboard` is given.
    public struct Options: Sendable {
        /// The port on 127.0.0.1; 0 lets the kernel choose.
        public var port: UInt16 = 0
        /// heraldd's socket; nil for the usual one.
        public var socketPath: String?
        /// The posts the page lists.
        public var recentPosts = 100
        /// The most names the dashboard keeps.
        public var maximumNames = 2048
        /// The token; nil makes a random one.
        public var token: String?
        /// Where the dashboard logs.
        public var logger = Logger.disabled

        /// The defaults.
        public init() {}

        /// What `herald dashboard` logs: notices and worse (a dropped page, a server that stopped) on standard
        /// error. Here, so that the command line goes through this library and Herald like any app, not HeraldPosix.
        public mutating func logNoticesToStandardError() {
            logger = Logger(label: "herald dashboard", level: .notice)
        }
    }

    /// The URL to open, with the token.
    public let url: String
    private let shared: SharedModel
    private let control: Herald
    private let monitor: Herald
    private let thread: ServerThread
    /// Reads the `MONITOR` into the model; it ends when the connection does.
    private let monitorTask: Task<Void, Never>

    /// Connects to heraldd, reads what it knows, and starts serving; the URL works once this returns.
    ///
    /// - Throws: ``HeraldError`` when heraldd cannot be reached or refuses the `MONITOR`; a ``SystemError`` when the
    ///   port cannot be bound.
    public init(options: Options) async throws {
        let heraldOptions = Herald.Options(clientName: "herald-dashboard")
        control = try await Herald.connect(socketPath: options.socketPath, options: heraldOptions)
        monitor = try await Herald.connect(socketPath: options.socketPath, options: heraldOptions)
        shared = SharedModel(DashboardModel(recentPosts: options.recentPosts, maximumNames: options.maximumNames))
        // The monitor first, then the names and values: a post between the two is seen, and a GET answer older than
        // it does not replace it (``NameTree/retainedValueRead(_:payload:sequence:)``).
        let notifications = try await monitor.monitor(bufferingPolicy: .bufferingNewest(8192))
        let shared = self.shared
        // Every task of the dashboard runs on a Herald's reader thread, never on the global pool: once the pool has
        // run a job, libdispatch's workqueue monitor wakes the process once a second, for good.
        monitorTask = Task.detached(executorPreference: monitor.taskExecutor) {
            for await note in notifications {
                if case .dropped(let count, _, _)? = note.notice {
                    shared.mutex.withLock { $0.postsDropped(count) }
                    continue
                }
                let name = note.name
                let second = Int64(SystemClock.realtimeNanoseconds() / 1_000_000_000)
                note.withUnsafePayloadBytes { payload in
                    shared.mutex.withLock { model in
                        model.postSeen(
                            name,
                            payload: payload,
                            timeNanoseconds: note.timeNanoseconds,
                            sequence: note.sequence,
                            setsRetained: note.updatesRetainedValue,
                            second: second
                        )
                    }
                }
            }
        }
        // A session with more names than heraldd's --max-names is refused NAMES (TOO_MANY_NAMES): the dashboard
        // still starts, shows the names as posts arrive through the monitor, and says why the tree starts empty.
        var listed: [HeraldName] = []
        switch await Self.names(of: control) {
        case .success(let names): listed = names
        case .failure(let error) where error.code == .refused:
            shared.mutex.withLock { $0.noticeAdded("heraldd refused to list its names: \(error.message)") }
        case .failure(let error): throw error
        }
        for name in listed.map(\.name) {
            let value = try await control.retainedValue(of: name)
            shared.mutex.withLock {
                $0.retainedValueRead(
                    name,
                    payload: value?.payload,
                    sequence: value?.sequence ?? 0,
                    timeNanoseconds: value?.timeNanoseconds
                )
            }
        }
        shared.mutex.withLock { $0.subscriberCountsRead(listed) }
        let status = try await control.status()
        shared.mutex.withLock { $0.statusRead(status) }

        let token = options.token ?? AccessPolicy.makeToken()
        var configuration = HTTPServer.Configuration()
        configuration.logger = options.logger
        configuration.maximumStreams = 16
        configuration.maximumRequestConnections = 64
        let server = try HTTPServer(
            host: "127.0.0.1",
            port: options.port,
            stopSignals: [],
            configuration: configuration
        )
        let policy = AccessPolicy(token: token, port: server.port)
        url = "http://127.0.0.1:\(server.port)/?token=\(token)"
        let control = self.control
        let logger = options.logger
        let actions = DashboardActions(
            post: { name, payload, retain in
                Task(executorPreference: control.taskExecutor) {
                    do throws(HeraldError) {
                        _ = try await control.postAcknowledged(name, payload: payload, retain: retain)
                        shared.mutex.withLock { $0.noticeAdded("posted to \(name)\(retain ? ", retained" : "")") }
                    } catch {
                        shared.mutex.withLock { $0.noticeAdded("post to \(name) failed: \(error.message)") }
                    }
                }
            },
            refreshStatus: {
                // The subscriber counts with the status: only while a page is open, one bounded NAMES each time.
                Task(executorPreference: control.taskExecutor) {
                    guard let status = try? await control.status() else { return }
                    shared.mutex.withLock { $0.statusRead(status) }
                    guard let listed = try? await control.names(withSubscriberCounts: true) else { return }
                    shared.mutex.withLock { $0.subscriberCountsRead(listed) }
                }
            },
            plugin: { action, name in
                Task(executorPreference: control.taskExecutor) {
                    do throws(HeraldError) {
                        try await control.controlPlugin(action, named: name)
                        shared.mutex.withLock { $0.noticeAdded("heraldd did \(action.rawValue) \(name)") }
                    } catch {
                        shared.mutex.withLock { $0.noticeAdded("\(action.rawValue) \(name) failed: \(error.message)") }
                    }
                }
            }
        )
        let handler = DashboardServer(
            shared: shared,
            policy: policy,
            actions: actions,
            logger: logger
        )
        thread = ServerThread(server: server, handler: handler)
        thread.start()
    }

    /// Runs until heraldd goes away. Nothing here wakes on a timer: the HTTP server asks for the daemon's status
    /// and the subscriber counts every 2 s while a page is open, and not at all otherwise.
    ///
    /// - Throws: why the connection to heraldd ended.
    public func run() async throws(HeraldError) {
        await monitorTask.value
        throw monitor.disconnectReason ?? control.disconnectReason
            ?? HeraldError(.daemonUnavailable, "the connection to heraldd ended")
    }

    /// `NAMES` with counts, as a result: a refusal is one answer the caller handles, not a failure to start.
    private static func names(of control: Herald) async -> Result<[HeraldName], HeraldError> {
        do { return .success(try await control.names(withSubscriberCounts: true)) } catch { return .failure(error) }
    }
}

/// The HTTP server's own thread: its loop blocks, so it must not run on the concurrency pool.
final class ServerThread: @unchecked Sendable {
    // Touched only by the thread once started.
    private let server: HTTPServer
    private let handler: DashboardServer

    init(server: HTTPServer, handler: DashboardServer) {
        self.server = server
        self.handler = handler
    }

    func start() {
        DetachedThread.start(name: "dashboard-http") { [self] in
            do {
                try server.run(handler: handler)
            } catch {
                handler.logger.error("the HTTP server stopped: \(error)")
            }
        }
    }
}
#endif
