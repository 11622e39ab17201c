public import HeraldDBus

/// The MPRIS players on the session bus: `media.player.NAME`, `{"status", "title", "artist"}`, retained, posted when
/// it changes and cleared when the player leaves the bus.
public struct MediaPlayers: Sendable {
    /// The MPRIS bus names' prefix.
    public static let busNamePrefix = "org.mpris.MediaPlayer2."

    private struct Player: Sendable {
        var name: String
        var status: String?
        var title: String?
        var artist: String?
        var posted: [String: DBusJSON]?
    }

    /// At most this many players are followed; past it a new one is refused, so a service that claims a thousand
    /// names cannot fill heraldd's retained store.
    public let maximumPlayers: Int
    private var players: [String: Player] = [:]

    /// No player yet.
    public init(maximumPlayers: Int = 64) {
        self.maximumPlayers = maximumPlayers
    }

    /// The Herald name of the player owning `busName`: `org.mpris.MediaPlayer2.vlc.instance42` is
    /// `media.player.vlc_instance42` (one name segment: any byte but letters, digits, `-` and `_` becomes `_`).
    public static func heraldName(of busName: String) -> String? {
        guard busName.hasPrefix(busNamePrefix), busName.utf8.count > busNamePrefix.utf8.count else { return nil }
        let rest = busName.utf8.dropFirst(busNamePrefix.utf8.count).prefix(200).map { byte -> UInt8 in
            let plain =
                (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
            return plain ? byte : UInt8(ascii: "_")
        }
        return "media.player." + String(decoding: rest, as: UTF8.self)
    }

    /// The bus names followed now.
    public var busNames: [String] { Array(players.keys) }

    /// A player's `org.mpris.MediaPlayer2.Player` properties, read in full when it appears or changed.
    public mutating func playerChanged(_ busName: String, _ properties: [String: DBusValue]) -> SourceUpdate {
        guard let name = Self.heraldName(of: busName) else { return SourceUpdate() }
        if players[busName] == nil {
            guard players.count < maximumPlayers else {
                return SourceUpdate(refusals: ["\(busName): already following \(maximumPlayers) players"])
            }
            players[busName] = Player(name: name)
        }
        var player = players[busName]!
        var reader = PropertyReader(properties, of: "org.mpris.MediaPlayer2.Player")
        var refusals: [String] = []
        if let status = reader.string("PlaybackStatus") { player.status = status }
        if let metadata = reader.dictionary("Metadata") {
            var fields = PropertyReader(metadata, of: "org.mpris.MediaPlayer2.Player.Metadata")
            player.title = fields.string("xesam:title")
            if case .array(.string, let artists)? = fields.properties["xesam:artist"] {
                player.artist = artists.compactMap(\.stringValue).joined(separator: ", ")
            } else {
                player.artist = fields.string("xesam:artist")
            }
            refusals += fields.refusals
        }
        var update = settle(busName, &player)
        update.refusals = reader.refusals + refusals
        players[busName] = player
        return update
    }

    /// The player owning `busName` left the bus: its name is cleared.
    public mutating func playerLeft(_ busName: String) -> SourceUpdate {
        guard let player = players.removeValue(forKey: busName), player.posted != nil else { return SourceUpdate() }
        return SourceUpdate(posts: [DesktopPost(player.name, nil, retain: true)])
    }

    private func settle(_ busName: String, _ player: inout Player) -> SourceUpdate {
        let payload: [String: DBusJSON] = [
            "status": player.status.map { .string($0) } ?? .null,
            "title": player.title.map { .string($0) } ?? .null,
            "artist": player.artist.map { .string($0) } ?? .null,
        ]
        guard payload != player.posted else { return SourceUpdate() }
        player.posted = payload
        return SourceUpdate(posts: [DesktopPost(player.name, payload, retain: true)])
    }
}
