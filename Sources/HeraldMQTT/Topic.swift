/// The rules for Topic Names and Topic Filters (§4.7), which the encoder and the decoder share.
public enum Topic {
    /// Checks a Topic Name, as a PUBLISH or a will carries it: at least one character (unless a Topic Alias stands
    /// for it) and no wildcard.
    ///
    /// - Throws: 0x90 Topic Name invalid, or 0x82 Protocol Error for an empty name without an alias.
    public static func validateName(_ topic: String, allowEmpty: Bool = false) throws(PacketError) {
        guard !topic.isEmpty || allowEmpty else {
            throw .protocolError("the Topic Name is empty and no Topic Alias stands for it")
        }
        // In place where the bytes are contiguous (a native string always is), not index by index (perf).
        let isWildcard = { (byte: UInt8) in byte == UInt8(ascii: "+") || byte == UInt8(ascii: "#") }
        let hasWildcard =
            topic.utf8.withContiguousStorageIfAvailable { $0.contains(where: isWildcard) }
            ?? topic.utf8.contains(where: isWildcard)
        guard !hasWildcard else {
            throw PacketError(.topicNameInvalid, "the Topic Name \"\(topic)\" contains a wildcard")
        }
    }

    /// Checks a Topic Filter: at least one character; `+` only as a whole level; `#` only as the whole last level.
    ///
    /// - Throws: 0x8F Topic Filter invalid.
    public static func validateFilter(_ filter: String) throws(PacketError) {
        guard !filter.isEmpty else { throw PacketError(.topicFilterInvalid, "a Topic Filter is empty") }
        let levels = filter.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
        for (index, level) in levels.enumerated() {
            let plus = level.contains(UInt8(ascii: "+"))
            let hash = level.contains(UInt8(ascii: "#"))
            if (plus || hash) && level.count != 1 {
                throw PacketError(
                    .topicFilterInvalid,
                    "the Topic Filter \"\(filter)\" has a wildcard that is not a whole level"
                )
            }
            if hash && index != levels.count - 1 {
                throw PacketError(.topicFilterInvalid, "the Topic Filter \"\(filter)\" has '#' before its last level")
            }
        }
    }
}
