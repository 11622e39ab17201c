import Foundation

/// One line of a room stream: the status, a message, or something else that a client skips.
public enum ChatLine: Hashable, Sendable {
    /// `{"activeUsers":N}`.
    case status(ServerStatus)
    /// A message.
    case message(Message)
    /// A line that decodes as neither; Blabber skips these, and so do Herald's clients.
    case unknown(String)

    /// Decodes one line (without its CRLF). A message is tried first, since its keys are required.
    public init<Bytes: Collection<UInt8>>(decoding bytes: Bytes) {
        let data = Data(bytes)
        let decoder = JSONDecoder()
        if let message = try? decoder.decode(Message.self, from: data) {
            self = .message(message)
        } else if let status = try? decoder.decode(ServerStatus.self, from: data) {
            self = .status(status)
        } else {
            self = .unknown(String(decoding: bytes, as: UTF8.self))
        }
    }

    /// The line as the server sends it: compact JSON (sorted keys, so output is reproducible) and CRLF.
    public var encoded: [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data: Data
        switch self {
        // Encoding these plain structs cannot fail: no floats that are NaN or infinite are possible for `date`
        // except by construction, which the server never does.
        case .status(let status): data = try! encoder.encode(status)
        case .message(let message): data = try! encoder.encode(message)
        case .unknown(let text): data = Data(text.utf8)
        }
        return Array(data) + [0x0D, 0x0A]
    }
}
