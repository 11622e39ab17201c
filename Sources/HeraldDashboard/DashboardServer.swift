import Foundation
import Herald
import HeraldHTTP
import HeraldPosix
import Synchronization

/// The model, shared by the task that reads the `MONITOR` and the HTTP server's loop thread: each holds the lock
/// for one event or one flush.
final class SharedModel: Sendable {
    let mutex: Mutex<DashboardModel>

    init(_ model: DashboardModel) {
        mutex = Mutex(model)
    }
}

/// What the page's requests do to heraldd: carried out on the Herald connection by tasks of their own, since the
/// HTTP loop must not wait. Each reports its outcome as a notice in the model.
struct DashboardActions: Sendable {
    var post: @Sendable (_ name: String, _ payload: [UInt8], _ retain: Bool) -> Void
    /// Reads heraldd's `STATUS`, and `NAMES` with the subscriber counts, into the model.
    var refreshStatus: @Sendable () -> Void
    var plugin: @Sendable (_ action: Herald.PluginAction, _ name: String) -> Void
}

#if os(Linux)
/// The dashboard on ``HTTPServer``: answers the routes ``Route`` decides, and streams the model's changes to every
/// open page as Server-Sent Events, a few times a second while a page is open and not at all otherwise.
///
/// A page that does not read its stream costs at most ``streamQueueLimit`` bytes: past that what waits for it is
/// discarded and its stream ends with a `dropped` event that says why, as the chat server drops a listener that
/// stopped reading.
final class DashboardServer: HTTPHandler {
    typealias ID = HTTPServer.ConnectionID

    /// Bytes that may wait unwritten for one stream before it is dropped.
    let streamQueueLimit: Int
    /// How often the open pages get the changes.
    static let flushInterval: UInt64 = 250_000_000

    let shared: SharedModel
    let policy: AccessPolicy
    let actions: DashboardActions
    let logger: Logger
    /// The open streams and the name each plots.
    private var streams: [ID: String?] = [:]
    /// The newest post sent to the streams.
    private var lastPostSent: UInt64 = 0
    /// The last second whose tick was sent.
    private var lastTick: Int64 = 0
    private(set) var nextDeadline: UInt64?

    init(
        shared: SharedModel,
        policy: AccessPolicy,
        actions: DashboardActions,
        streamQueueLimit: Int = 256 * 1024,
        logger: Logger
    ) {
        self.shared = shared
        self.policy = policy
        self.actions = actions
        self.streamQueueLimit = streamQueueLimit
        self.logger = logger
    }

    static var currentSecond: Int64 { Int64(SystemClock.realtimeNanoseconds() / 1_000_000_000) }

    /// `same-origin`, not `no-referrer`: the token in the URL still never leaves for another site, and the page's own
    /// form POSTs keep their Origin, which `no-referrer` turns into "null" for a form sent without the script.
    static let securityHeaders: HTTPHeaders = [
        "Cache-Control": "no-store",
        "Referrer-Policy": "same-origin",
        "X-Frame-Options": "DENY",
        "X-Content-Type-Options": "nosniff",
        "Content-Security-Policy":
            "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; connect-src 'self'; "
            + "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    ]

    func handle(_ request: HTTPRequest, on connection: ID, server: HTTPServer) -> HTTPServer.Reply {
        let route = Route(request, policy: policy)
        switch route {
        case .refuse(let response):
            if response.status == .forbidden {
                logger.info(
                    "refused \(request.method) \(request.path): \(String(decoding: response.body, as: UTF8.self))"
                )
            }
            return .response(response)
        case .page(let selected):
            let model = shared.mutex.withLock { $0 }
            let html = PageRenderer.render(model, token: policy.token, second: Self.currentSecond, selected: selected)
            var headers = Self.securityHeaders
            headers.add(name: "Content-Type", value: "text/html; charset=utf-8")
            return .response(
                HTTPResponse(status: .ok, headers: headers, body: request.method == "HEAD" ? [] : Array(html.utf8))
            )
        case .events:
            var head = HTTPResponseHead.chunked(contentType: "text/event-stream; charset=utf-8")
            head.headers.add(name: "Cache-Control", value: "no-store")
            return .stream(head)
        case .post(let name, let payload, let retain, let wantsJSON):
            actions.post(name, payload, retain)
            return .response(answer("posting to \(name)", json: wantsJSON))
        case .plugin(let action, let name, let wantsJSON):
            actions.plugin(action, name)
            return .response(answer("asked heraldd to \(action.rawValue) \(name)", json: wantsJSON))
        }
    }

    /// 202 with a JSON message for the page's script; 303 back to the page for a form sent without it.
    private func answer(_ message: String, json: Bool) -> HTTPResponse {
        if json {
            return HTTPResponse(
                status: .accepted,
                headers: ["Content-Type": "application/json; charset=utf-8", "Cache-Control": "no-store"],
                body: Array("{\"error\":false,\"message\":\(Markup.json(message))}".utf8)
            )
        }
        return HTTPResponse(status: .seeOther, headers: ["Location": "/?token=\(policy.token)"])
    }

    func streamStarted(_ connection: ID, request: HTTPRequest, server: HTTPServer) {
        guard case .events(let after, let selected) = Route(request, policy: policy) else { return }
        streams[connection] = selected
        let second = Self.currentSecond
        let (full, series) = shared.mutex.withLock { model in
            (
                model.fullUpdate(afterPost: after, second: second),
                model.seriesJSON(endingAt: second - 1, selected: selected)
            )
        }
        if lastTick == 0 { lastTick = second - 1 }
        server.send(Self.event("update", full), to: connection)
        server.send(Self.event("series", series), to: connection)
        scheduleFlush()
    }

    func streamClosed(_ connection: ID, server: HTTPServer) {
        streams.removeValue(forKey: connection)
        if streams.isEmpty { nextDeadline = nil }
    }

    func streamDrained(_ connection: ID, bytes: Int, server: HTTPServer) {}

    func deadlineReached(server: HTTPServer) {
        nextDeadline = nil
        guard !streams.isEmpty else { return }
        let second = Self.currentSecond
        var lastPost = lastPostSent
        let ticks = lastTick < second - 1 ? (lastTick + 1)...(second - 1) : nil
        let (update, tickFields, selectedCounts) = shared.mutex.withLock { model in
            let update = model.takeUpdate(lastPost: &lastPost, second: second)
            let fields = ticks.map { $0.map { model.tickFields(second: $0) } } ?? []
            var counts: [String: [UInt32]] = [:]
            if let ticks {
                for case let name? in Set(streams.values) {
                    counts[name] = ticks.map { model.names.posts(of: name, at: $0) }
                }
            }
            return (update, fields, counts)
        }
        lastPostSent = lastPost
        if let ticks {
            lastTick = ticks.upperBound
            // The status and the subscriber counts every 2 s while a page looks, and never otherwise.
            if ticks.contains(where: { $0 % 2 == 0 }) { actions.refreshStatus() }
        }
        let everyone = dropSlowStreams(server)
        if let update {
            server.send(Self.event("update", update), to: everyone)
        }
        for (offset, fields) in tickFields.enumerated() {
            let plain = Self.event("tick", fields + "}")
            var unselected: [ID] = []
            for id in everyone {
                if let name = streams[id] ?? nil, let count = selectedCounts[name]?[offset] {
                    server.send(Self.event("tick", fields + ",\"selectedCount\":\(count)}"), to: id)
                } else {
                    unselected.append(id)
                }
            }
            server.send(plain, to: unselected)
        }
        scheduleFlush()
    }

    /// Ends the streams whose client has not read ``streamQueueLimit`` bytes, each with a `dropped` event; returns
    /// the others.
    private func dropSlowStreams(_ server: HTTPServer) -> [ID] {
        var kept: [ID] = []
        for id in streams.keys {
            guard let queued = server.queuedBytes(of: id) else { continue }
            if queued > streamQueueLimit {
                let reason =
                    "the page read too slowly: \(queued) bytes waited for it, more than the limit of \(streamQueueLimit)."
                logger.warning("dropped \(id): \(reason)")
                // What waits is discarded, so the memory goes now and the message comes right after what the client
                // has already been sent.
                server.abandon(id, lastChunk: Self.event("dropped", "{\"reason\":\(Markup.json(reason))}"))
                streams.removeValue(forKey: id)
            } else {
                kept.append(id)
            }
        }
        return kept
    }

    private func scheduleFlush() {
        guard nextDeadline == nil, !streams.isEmpty else { return }
        nextDeadline = SystemClock.monotonicNanoseconds() + Self.flushInterval
    }

    /// One Server-Sent Event.
    static func event(_ name: String, _ data: String) -> [UInt8] {
        Array("event: \(name)\ndata: \(data)\n\n".utf8)
    }
}
#endif
