public import Foundation

/// One chat message, exactly as the Blabber protocol carries it (../shared/reference/chat-api.md).
///
/// Encoded and decoded with Foundation's default `JSONEncoder`/`JSONDecoder`, as the book's server and app do:
/// `id` is a UUID string (written upper-case, accepted in either case), `date` is a JSON number of seconds since
/// 2001-01-01T00:00:00Z (Foundation's reference date), and `user` is absent for a system message (`null` is accepted
/// on input).
public struct Message: Codable, Hashable, Sendable {
    /// The message's identity, chosen by the client that wrote it.
    public var id: UUID
    /// Who wrote it; nil for a system message ("alice connected", "alice went away").
    public var user: String?
    /// The text.
    public var message: String
    /// When the server accepted it; the server replaces whatever the client sent.
    public var date: Date

    /// Creates a message.
    ///
    /// - Parameters:
    ///   - id: the identity; a fresh UUID by default.
    ///   - user: the author, or nil for a system message.
    ///   - message: the text.
    ///   - date: the time; the server stamps its own on acceptance.
    public init(id: UUID = UUID(), user: String?, message: String, date: Date = Date()) {
        self.id = id
        self.user = user
        self.message = message
        self.date = date
    }

    /// Whether this is a system message: one without a user.
    public var isSystemMessage: Bool {
        user == nil
    }

    /// Decodes a message from a JSON body, strictly: every required key present and of the right type.
    ///
    /// - Parameter bytes: the JSON text.
    /// - Returns: the message.
    /// - Throws: ``ChatProtocolError`` whose reason says what is wrong, e.g. "the key 'date' is missing".
    public static func decode<Bytes: Collection<UInt8>>(json bytes: Bytes) throws(ChatProtocolError) -> Message {
        do {
            return try JSONDecoder().decode(Message.self, from: Data(bytes))
        } catch let error as DecodingError {
            throw ChatProtocolError(reason: "the body is not a valid Message: \(ChatProtocolError.describe(error))")
        } catch {
            throw ChatProtocolError(reason: "the body is not a valid Message: \(error)")
        }
    }
}

/// The first line of a room stream, and the later lines the Herald server sends when the count changes.
public struct ServerStatus: Codable, Hashable, Sendable {
    /// The number of distinct names connected to the room now (the book's server: active in the last 300 s).
    public var activeUsers: Int

    /// Creates a status.
    public init(activeUsers: Int) {
        self.activeUsers = activeUsers
    }
}
