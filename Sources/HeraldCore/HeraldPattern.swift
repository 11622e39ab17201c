import HeraldWire

/// A subscription pattern, checked: a name whose segments may be `*` (exactly one segment), and whose last segment
/// may be `**` (one or more), as Protocols/wire.md defines them.
///
/// ``Herald/notifications(matching:bufferingPolicy:overflow:)`` takes the pattern as text; this type is for an app
/// that wants to know which of its patterns a name matches, as `herald observe` does to print a post that several
/// patterns match only once.
public struct HeraldPattern: Sendable, Hashable, CustomStringConvertible {
    private let pattern: Pattern

    /// Parses and checks `text`.
    ///
    /// - Throws: ``HeraldError/Code/invalidPattern`` saying what is wrong, e.g.
    ///   `invalid pattern "a.**.b": '**' is allowed only as the last segment`.
    public init(_ text: String) throws(HeraldError) {
        do throws(WireError) {
            pattern = try Pattern(text)
        } catch {
            throw HeraldError(.invalidPattern, error.reason)
        }
    }

    /// The pattern as written.
    public var text: String {
        pattern.text
    }

    /// The pattern as written.
    public var description: String {
        pattern.text
    }

    /// Whether the daemon would deliver a post to `name` to a subscription to this pattern.
    public func matches(_ name: String) -> Bool {
        pattern.matches(name)
    }
}
