import Foundation

/// The user name a `GET /chat/room?<name>` request carries.
public enum RoomName {
    /// The longest name accepted, in characters.
    public static let maximumLength = 64

    /// Parses the query string of a room request.
    ///
    /// The book's form is the bare query, percent-encoded, with `+` for a space: `?Alice%20Smith`. The form
    /// `?user=Alice`, which the book's server hangs on, is accepted too. Leading and trailing whitespace is trimmed.
    ///
    /// - Parameter query: the text after `?`, or nil when the target has no `?`.
    /// - Returns: the name.
    /// - Throws: ``ChatProtocolError`` for a missing or empty name, bad percent-encoding, control characters, or a
    ///   name longer than ``maximumLength``.
    public static func parse(query: String?) throws(ChatProtocolError) -> String {
        guard let query, !query.isEmpty else {
            throw ChatProtocolError(reason: "the room request has no user name: use /chat/room?NAME")
        }
        var raw = query
        for parameter in query.split(separator: "&", omittingEmptySubsequences: false)
        where parameter.hasPrefix("user=") {
            raw = String(parameter.dropFirst("user=".count))
            break
        }
        guard let decoded = raw.replacingOccurrences(of: "+", with: " ").removingPercentEncoding else {
            throw ChatProtocolError(reason: "the user name '\(raw)' is not valid percent-encoding")
        }
        let name = decoded.trimmingCharacters(in: .whitespacesAndNewlines)
        if name.isEmpty {
            throw ChatProtocolError(reason: "the user name is empty: use /chat/room?NAME")
        }
        if name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            throw ChatProtocolError(reason: "the user name contains a control character")
        }
        if name.count > maximumLength {
            throw ChatProtocolError(reason: "the user name is longer than \(maximumLength) characters")
        }
        return name
    }
}
