import HeraldDBus

/// A failure of the D-Bus client: what failed and why.
public struct DBusClientError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure.
    public enum Code: Hashable, Sendable {
        /// The bus address is unset or unusable.
        case badAddress
        /// The bus could not be reached or refused the connection.
        case connectionFailed
        /// SASL authentication was refused.
        case authenticationFailed
        /// The connection was lost while the call was pending; the client reconnects by itself.
        case disconnected
        /// No reply came within the call's timeout.
        case timedOut
        /// The peer answered with an error; ``DBusClientError/errorName`` says which.
        case errorReply
        /// The client was closed.
        case closed
        /// The bus sent something the specification forbids, or the reply was not of the expected type.
        case protocolViolation
        /// Too many calls wait for replies, or too many bytes wait to be written.
        case tooManyPendingCalls
    }

    /// What kind of failure.
    public var code: Code
    /// What failed and why, as a sentence for a log line.
    public var reason: String
    /// For ``Code/errorReply``: the error's name, e.g. `org.freedesktop.DBus.Error.ServiceUnknown`.
    public var errorName: String?

    /// Creates an error.
    public init(_ code: Code, _ reason: String, errorName: String? = nil) {
        self.code = code
        self.reason = reason
        self.errorName = errorName
    }

    public var description: String { reason }

    static func from(errorReply message: DBusMessage) -> DBusClientError {
        let name = message.errorName ?? "(no name)"
        let text = message.body.first?.stringValue ?? ""
        return DBusClientError(.errorReply, "\(name): \(text)", errorName: name)
    }
}
