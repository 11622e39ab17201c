/// A JSON value, as Herald's payloads carry them: the D-Bus codec's own, so that it needs no Foundation.
///
/// The cases mirror the Herald library's `JSONValue` one for one, so a bridge converts between them with a switch.
public indirect enum DBusJSON: Hashable, Sendable {
    /// `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// A number. 64-bit integers past 2^53 lose precision, as they would in any JSON reader.
    case number(Double)
    /// A string.
    case string(String)
    /// An array.
    case array([DBusJSON])
    /// An object.
    case object([String: DBusJSON])
}
