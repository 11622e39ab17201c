import ChatCore
import Foundation
import HeraldHTTP
import HeraldPosix

/// The Blabber chat protocol on ``HTTPServer``: routing, request validation, and carrying out the room's actions.
///
/// The decisions are ChatCore's ``Room`` and ``Bot``; this class only translates between them and HTTP.
final class ChatServer: HTTPHandler {
    private var room: Room
    private var bot: Bot?
    private let logger: Logger

    /// The paths served and the methods each allows, for 404 and 405.
    private static let routes: [String: String] = ["/chat/room": "GET", "/chat/say": "POST"]

    init(room: Room, bot: Bot?, logger: Logger) {
        self.room = room
        self.bot = bot
        self.logger = logger
    }

    func handle(_ request: HTTPRequest, on connection: HTTPServer.ConnectionID, server: HTTPServer) -> HTTPServer.Reply
    {
        guard let allowed = Self.routes[request.path] else {
            return .response(.error(.notFound, reason: "there is no \(request.path) here; try /chat/room?NAME"))
        }
        guard request.method == allowed else {
            return .response(
                .error(
                    .methodNotAllowed,
                    reason: "\(request.path) takes \(allowed), not \(request.method)",
                    headers: ["Allow": allowed]
                )
            )
        }
        switch request.path {
        case "/chat/room":
            do throws(ChatProtocolError) {
                _ = try RoomName.parse(query: request.query)
            } catch {
                return .response(.error(.badRequest, reason: error.reason))
            }
            return .stream(.chunked(contentType: "application/octet-stream"))
        default:
            return .response(say(request.body, from: server.peerAddress(of: connection), server: server))
        }
    }

    private func say(_ body: [UInt8], from peer: String?, server: HTTPServer) -> HTTPResponse {
        let message: Message
        do throws(ChatProtocolError) {
            message = try Message.decode(json: body)
        } catch {
            return .error(.badRequest, reason: error.reason)
        }
        if message.message.isEmpty {
            return .error(.badRequest, reason: "the message is empty")
        }
        if case .forbidden(let reason) = post(message, from: peer, server: server) {
            return .error(.forbidden, reason: reason)
        }
        return .text("OK")
    }

    @discardableResult
    private func post(_ message: Message, from peer: String?, server: HTTPServer) -> Room.PostOutcome {
        let now = Date()
        let (outcome, actions) = room.messagePosted(message, from: peer, now: now)
        switch outcome {
        case .accepted(let stamped):
            logger.debug("\(stamped.user ?? "*"): \(stamped.message)")
            bot?.messagePosted(stamped, now: now)
        case .duplicatePresence:
            logger.info("dropped a repeated presence message: \(message.message)")
        case .forbidden(let reason):
            logger.info("refused a system message from \(peer ?? "an unknown address"): \(reason)")
        }
        perform(actions, server: server)
        return outcome
    }

    func streamStarted(_ connection: HTTPServer.ConnectionID, request: HTTPRequest, server: HTTPServer) {
        // handle(_:on:server:) checked the name before starting the stream.
        let name = (try? RoomName.parse(query: request.query)) ?? "?"
        logger.info("\(name) joined (\(connection))")
        let peer = server.peerAddress(of: connection)
        let id = Room.ListenerID(connection.rawValue)
        perform(room.listenerJoined(id, name: name, peer: peer, now: Date()), server: server)
    }

    func streamClosed(_ connection: HTTPServer.ConnectionID, server: HTTPServer) {
        logger.info("\(connection) left")
        perform(room.listenerLeft(Room.ListenerID(connection.rawValue), now: Date()), server: server)
    }

    func streamDrained(_ connection: HTTPServer.ConnectionID, bytes: Int, server: HTTPServer) {
        room.listenerDrained(Room.ListenerID(connection.rawValue), bytes: bytes)
    }

    var nextDeadline: UInt64? {
        guard let deadline = bot?.deadline else {
            return nil
        }
        let seconds = max(deadline.timeIntervalSinceNow, 0)
        return SystemClock.monotonicNanoseconds() + UInt64(seconds * 1_000_000_000)
    }

    func deadlineReached(server: HTTPServer) {
        if let reply = bot?.deadlinePassed(now: Date()) {
            post(reply, from: nil, server: server)
        }
    }

    private func perform(_ actions: [Room.Action], server: HTTPServer) {
        for action in actions {
            switch action {
            case .send(let line, let listeners):
                // One chunk encoded, shared by every listener's queue.
                server.send(line, to: listeners.map { HTTPServer.ConnectionID(rawValue: $0.rawValue) })
            case .disconnect(let listener, let reason):
                logger.warning("dropped listener \(listener.rawValue): \(reason)")
                server.finish(HTTPServer.ConnectionID(rawValue: listener.rawValue))
            }
        }
    }
}
