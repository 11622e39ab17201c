/// What makes an imported message the same as one seen before: its origin host, the origin daemon's pid and its
/// sequence there, as its user properties carry them.
///
/// The three strings as they are, not joined into one: building `"ORIGIN/DAEMON/SEQUENCE"` cost an interpolation
/// and often an allocation per imported message.
struct ImportKey: Hashable, Sendable {
    let origin: String
    let daemon: String
    let sequence: String
}
