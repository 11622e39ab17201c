/// Input that does not follow the chat protocol: an undecodable body, an unusable room name.
public struct ChatProtocolError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What is wrong, as a sentence fragment for an HTTP error body or a log line.
    public var reason: String

    /// Creates an error with `reason`.
    public init(reason: String) {
        self.reason = reason
    }

    /// The reason.
    public var description: String {
        reason
    }
}

extension ChatProtocolError {
    /// A short, readable account of a `DecodingError`, naming the key and what was wrong with it; Foundation's own
    /// descriptions are long and differ between platforms.
    static func describe(_ error: DecodingError) -> String {
        func path(_ context: DecodingError.Context) -> String {
            let keys = context.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue }
            return keys.isEmpty ? "the top level" : "the key '\(keys.joined(separator: "."))'"
        }
        switch error {
        case .keyNotFound(let key, _):
            return "the key '\(key.stringValue)' is missing"
        case .typeMismatch(let type, let context):
            return "\(path(context)) is not \(typeName(type))"
        case .valueNotFound(let type, let context):
            return "\(path(context)) is null where \(typeName(type)) is required"
        case .dataCorrupted(let context):
            if context.codingPath.isEmpty {
                return "it is not JSON"
            }
            return "\(path(context)) is malformed (\(context.debugDescription))"
        @unknown default:
            return "\(error)"
        }
    }

    private static func typeName(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is Double.Type: "a number"
        case is Int.Type: "an integer"
        default: "a \(type)"
        }
    }
}
