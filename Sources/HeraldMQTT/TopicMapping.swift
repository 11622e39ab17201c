/// The mapping between Herald names and patterns and MQTT topics and filters, under a prefix.
///
/// - A name `a.b.c` is the topic `PREFIX/a/b/c`; in a pattern, `*` is `+` and a final `**` is `#`.
/// - A name segment containing `/`, `+` or `#` has no topic: it is refused, never mangled. So is a topic level
///   containing `.`, or an empty one, which has no name.
/// - Presence: the topic `PREFIX/$hosts/HOSTID/online` is the name `hosts.HOSTID.online`. A name whose first
///   segment is `$hosts`, and the plain topic `PREFIX/hosts/HOSTID/online`, are refused, so that each name has
///   one topic and each topic one name.
///
/// Herald's final `**` matches one or more segments, MQTT's `#` zero or more: a filter made from `a.**` also
/// matches the topic `PREFIX/a`, which the importer gets and maps to the name `a`; it checks the name against its
/// Herald pattern if that matters.
public struct TopicMapping: Hashable, Sendable {
    /// Why a name, pattern or topic has no counterpart.
    public enum Refusal: Error, Hashable, Sendable, CustomStringConvertible {
        /// A name or pattern segment contains `/`, `+` or `#`.
        case segmentHasTopicCharacter(String)
        /// The name's first segment is `$hosts`, which is presence's on the MQTT side.
        case reservedSegment(String)
        /// The topic is not under the prefix (or is the prefix itself).
        case notUnderPrefix(String)
        /// A topic level is empty, contains `.`, or is a plain `hosts/HOSTID/online`.
        case levelHasNoName(String)

        public var description: String {
            switch self {
            case .segmentHasTopicCharacter(let segment): "the segment \"\(segment)\" contains '/', '+' or '#'"
            case .reservedSegment(let segment): "the segment \"\(segment)\" is reserved for host presence"
            case .notUnderPrefix(let topic): "the topic \"\(topic)\" is not under the prefix"
            case .levelHasNoName(let topic): "the topic \"\(topic)\" has a level that is no name segment"
            }
        }
    }

    /// The first topic levels, e.g. `herald` or `home/herald`.
    public let prefix: String

    /// Creates a mapping, or nil when `prefix` is no plain topic: empty, with an empty level, a wildcard, or a
    /// leading `$` (which brokers keep for themselves).
    public init?(prefix: String = "herald") {
        let levels = prefix.split(separator: "/", omittingEmptySubsequences: false)
        guard !prefix.hasPrefix("$"), levels.allSatisfy({ !$0.isEmpty && !$0.contains("+") && !$0.contains("#") })
        else { return nil }
        self.prefix = prefix
    }

    /// The filter of every host's presence topic: `PREFIX/$hosts/+/online`.
    public var presenceFilter: String { "\(prefix)/$hosts/+/online" }

    /// The presence topic of one host: `PREFIX/$hosts/HOSTID/online`.
    public func presenceTopic(hostID: String) -> String { "\(prefix)/$hosts/\(hostID)/online" }

    /// The topic of a Herald name.
    ///
    /// - Throws: `Refusal` when a segment contains `/`, `+` or `#`, or the first is `$hosts`.
    public func topic(forName name: String) throws(Refusal) -> String {
        if let topic = plainTopic(forName: name) { return topic }
        let segments = name.split(separator: ".", omittingEmptySubsequences: false)
        for segment in segments where segment.contains(where: { $0 == "/" || $0 == "+" || $0 == "#" }) {
            throw .segmentHasTopicCharacter(String(segment))
        }
        if segments.first == "$hosts" { throw .reservedSegment("$hosts") }
        if segments.count == 3 && segments[0] == "hosts" && segments[2] == "online" {
            return presenceTopic(hostID: String(segments[1]))
        }
        return prefix + "/" + segments.joined(separator: "/")
    }

    /// The filter of a Herald pattern: `*` becomes `+`, a final `**` becomes `#`.
    ///
    /// - Throws: `Refusal` when a literal segment contains `/`, `+` or `#`, or the first is `$hosts`.
    public func filter(forPattern pattern: String) throws(Refusal) -> String {
        let segments = pattern.split(separator: ".", omittingEmptySubsequences: false)
        var levels: [Substring] = []
        for (index, segment) in segments.enumerated() {
            if segment == "*" {
                levels.append("+")
            } else if segment == "**" && index == segments.count - 1 {
                levels.append("#")
            } else if segment.contains(where: { $0 == "/" || $0 == "+" || $0 == "#" }) {
                throw .segmentHasTopicCharacter(String(segment))
            } else {
                levels.append(segment)
            }
        }
        if segments.first == "$hosts" { throw .reservedSegment("$hosts") }
        return prefix + "/" + levels.joined(separator: "/")
    }

    /// The Herald name of a topic.
    ///
    /// - Throws: `Refusal` when the topic is not under the prefix, or a level is empty or contains `.`.
    public func name(forTopic topic: String) throws(Refusal) -> String {
        if let name = plainName(forTopic: topic) { return name }
        let head = prefix + "/"
        guard topic.hasPrefix(head), topic.utf8.count > head.utf8.count else { throw .notUnderPrefix(topic) }
        let levels = topic.utf8.dropFirst(head.utf8.count).split(
            separator: UInt8(ascii: "/"),
            omittingEmptySubsequences: false
        ).map { String(decoding: $0, as: UTF8.self) }
        guard levels.allSatisfy({ !$0.isEmpty && !$0.contains(".") }) else { throw .levelHasNoName(topic) }
        if levels.count == 3 && levels[2] == "online" {
            if levels[0] == "$hosts" { return "hosts.\(levels[1]).online" }
            if levels[0] == "hosts" { throw .levelHasNoName(topic) }
        }
        if levels[0] == "$hosts" { throw .levelHasNoName(topic) }
        return levels.joined(separator: ".")
    }

    // MARK: The usual case in one pass
    //
    // A bridge maps every message it carries. Splitting into segments and joining them again cost several
    // allocations per message (perf: 3 to 4 % of each bridge's samples); a name or topic that none of the rules
    // above concerns is mapped byte for byte instead, and everything else takes the general path.

    /// The topic of `name` when no rule but the separator applies: no `/`, `+` or `#`, and a first segment other
    /// than `hosts` and `$hosts`. Nil otherwise.
    private func plainTopic(forName name: String) -> String? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(prefix.utf8.count + 1 + name.utf8.count)
        bytes.append(contentsOf: prefix.utf8)
        bytes.append(UInt8(ascii: "/"))
        let start = bytes.count
        for byte in name.utf8 {
            switch byte {
            case UInt8(ascii: "/"), UInt8(ascii: "+"), UInt8(ascii: "#"): return nil
            case UInt8(ascii: "."): bytes.append(UInt8(ascii: "/"))
            default: bytes.append(byte)
            }
        }
        guard !Self.firstLevelIsHosts(bytes[start...], separator: UInt8(ascii: "/")) else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The name of `topic` when no rule but the separator applies: under the prefix, no empty level, no `.`, and a
    /// first level other than `hosts` and `$hosts`. Nil otherwise.
    private func plainName(forTopic topic: String) -> String? {
        let utf8 = topic.utf8
        let prefixCount = prefix.utf8.count
        guard utf8.count > prefixCount + 1, utf8.starts(with: prefix.utf8) else { return nil }
        let separator = utf8.index(utf8.startIndex, offsetBy: prefixCount)
        guard utf8[separator] == UInt8(ascii: "/") else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count - prefixCount - 1)
        // "/" before the first level: a "/" right after a "/" is an empty level, at the start or inside.
        var previous = UInt8(ascii: "/")
        for byte in utf8[utf8.index(after: separator)...] {
            switch byte {
            case UInt8(ascii: "."): return nil
            case UInt8(ascii: "/"):
                if previous == UInt8(ascii: "/") { return nil }
                bytes.append(UInt8(ascii: "."))
            default: bytes.append(byte)
            }
            previous = byte
        }
        // A last "/" is an empty last level.
        guard previous != UInt8(ascii: "/"), !Self.firstLevelIsHosts(bytes[...], separator: UInt8(ascii: "."))
        else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func firstLevelIsHosts(_ bytes: ArraySlice<UInt8>, separator: UInt8) -> Bool {
        let first = bytes.prefix { $0 != separator }
        return first.elementsEqual("hosts".utf8) || first.elementsEqual("$hosts".utf8)
    }
}
