import HeraldPosix
import HeraldWire

extension Herald {
    /// Checks that `name` is a notification name (Protocols/wire.md): dot-separated segments of letters, digits,
    /// `_` and `-`, at most 255 bytes.
    ///
    /// The library checks names itself before sending anything; this lets an app or a command line reject one
    /// early, with the same words.
    ///
    /// - Parameters:
    ///   - name: the name to check, e.g. `session.willResignActive`.
    ///   - forPosting: also refuse names under the reserved `herald.` prefix, which only the library's notices use.
    /// - Throws: ``HeraldError/Code/invalidName`` saying what is wrong and where, e.g.
    ///   `invalid name "a..b": empty segment at byte 2`; with `forPosting`, ``HeraldError/Code/reservedName``.
    public static func validate(name: String, forPosting: Bool = false) throws(HeraldError) {
        do throws(WireError) {
            try Name.validate(name)
        } catch {
            throw HeraldError(.invalidName, error.reason)
        }
        if forPosting && Name.isReserved(name) {
            throw HeraldError(
                .reservedName,
                "invalid name \"\(name)\": names under '\(Name.reservedPrefix).' are reserved for notices from the "
                    + "Herald library"
            )
        }
    }

    /// Checks that `pattern` is a subscription pattern (Protocols/wire.md): a name whose segments may be `*`, and
    /// whose last segment may be `**`.
    ///
    /// - Throws: ``HeraldError/Code/invalidPattern`` saying what is wrong, e.g.
    ///   `invalid pattern "a.**.b": '**' is allowed only as the last segment`.
    public static func validate(pattern: String) throws(HeraldError) {
        _ = try HeraldPattern(pattern)
    }

    /// The socket path ``connect(socketPath:options:)`` uses when given none, by the rule of Protocols/wire.md:
    /// `$HERALD_SOCKET`, else `$XDG_RUNTIME_DIR/herald/socket`, else `/tmp/herald-$UID/socket`.
    ///
    /// Read from the environment each time, as the daemon reads it when it starts.
    public static var defaultSocketPath: String {
        SocketPath.resolve(explicit: nil)
    }
}
