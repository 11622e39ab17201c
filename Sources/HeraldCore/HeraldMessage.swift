/// A typed notification, in the shape of Foundation's `NotificationCenter.Message`: a Codable value posted to a
/// fixed name, its payload the value as a JSON object.
///
/// ```swift
/// struct WillResignActive: HeraldMessage {
///     static let name = "session.willResignActive"
///     var user: String?
///     var reason: String?
/// }
/// try await herald.post(WillResignActive(user: "alice", reason: "lock"))
/// for await message in try await herald.messages(of: WillResignActive.self) { … }
/// ```
public protocol HeraldMessage: Codable, Sendable {
    /// The name the message is posted to and observed on; a name, not a pattern, and not under `herald.`.
    static var name: String { get }
}
