/// Why the socket systemd passed cannot be used.
public struct SystemdActivationError: Error, Sendable, CustomStringConvertible {
    /// What is wrong and how to fix it.
    public let message: String

    /// Creates an error.
    public init(message: String) {
        self.message = message
    }

    /// "socket activation: \(message)".
    public var description: String {
        "socket activation: \(message)"
    }
}
