/// What a `*.plugin` file's name becomes: the plugin's name, or, for a name no plugin may have, a key that still
/// makes a valid `herald.plugin.KEY`, so the refusal can be shown and posted like any other plugin's state.
///
/// A valid plugin name is one segment of letters, digits, `-` and `_`, at most ``PluginFile/maxNameBytes`` bytes
/// (``PluginFile/validateName(_:)``). Every other stem (the bytes before `.plugin`: empty, with dots, spaces,
/// wildcards, control bytes, not UTF-8, too long) gets the key `%` followed by the stem with each byte outside
/// that alphabet written `%XX`. Valid names never hold `%`, so no key of a refused file can be a plugin's name, and
/// two different stems never share a key: the escaping is one to one, and a key that would be too long ends in
/// `~` and a 64-bit hash of the whole stem instead. The key is always a valid name segment of at most
/// ``PluginFile/maxNameBytes`` bytes, whatever the bytes.
public enum PluginName {
    /// The name or key of the file name stem `stem`, and why it is refused when it is not a plugin name.
    ///
    /// - Parameter stem: the file name's bytes before `.plugin`, as the directory holds them.
    /// - Returns: the name and nil, or the key and the reason the name is refused.
    public static func resolve(stem: [UInt8]) -> (name: String, refusal: String?) {
        guard let text = String(validating: stem, as: UTF8.self) else {
            return (key(stem), "the plugin name (the file name before .plugin) is not UTF-8")
        }
        do {
            try PluginFile.validateName(text)
            return (text, nil)
        } catch {
            return (key(stem), error.reason)
        }
    }

    /// The name or key of a directory entry's bytes, or nil when they do not end in `.plugin` (not a plugin file).
    public static func resolve(fileName: [UInt8]) -> (name: String, refusal: String?)? {
        let suffix = Array(PluginFile.fileExtension.utf8)
        guard fileName.count >= suffix.count, fileName.suffix(suffix.count).elementsEqual(suffix) else { return nil }
        return resolve(stem: Array(fileName.dropLast(suffix.count)))
    }

    /// The key of a stem that is not a valid plugin name (see the type's summary).
    static func key(_ stem: [UInt8]) -> String {
        let hexDigits = Array("0123456789ABCDEF".utf8)
        var key: [UInt8] = [UInt8(ascii: "%")]
        key.reserveCapacity(1 + stem.count * 3)
        for byte in stem {
            if isNameByte(byte) {
                key.append(byte)
            } else {
                key += [UInt8(ascii: "%"), hexDigits[Int(byte >> 4)], hexDigits[Int(byte & 0x0F)]]
            }
        }
        if key.count > PluginFile.maxNameBytes {
            // "~" and 16 hex digits of the hash of the whole stem replace the tail: still unique, still short.
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325
            for byte in stem {
                hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
            }
            key.removeLast(key.count - (PluginFile.maxNameBytes - 17))
            key.append(UInt8(ascii: "~"))
            for shift in stride(from: 60, through: 0, by: -4) {
                key.append(hexDigits[Int((hash >> UInt64(shift)) & 0x0F)])
            }
        }
        return String(decoding: key, as: UTF8.self)
    }

    /// Whether `byte` may appear in a plugin name: a letter, a digit, `-` or `_`.
    static func isNameByte(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
            || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
            || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
    }
}
