import HeraldWire

/// A parsed `NAME.plugin` file: a declaration, or a mask that hides a system file of the same name.
///
/// The format is INI-like, as `.desktop` and D-Bus `.service` files are: one `[Plugin]` section of `Key=Value`
/// lines, with blank lines and `#` or `;` comment lines anywhere. Whitespace around the key and the value is
/// trimmed. Keys are case-sensitive; each appears at most once except `Environment=`.
///
/// A file with no keys at all (empty, or only comments, or only the `[Plugin]` line) or with `Enabled=false` is a
/// mask, as an empty unit file is to systemd.
///
/// Defaults: `Activation=subscribe` when the file has `Provides=`, else `manual`, because a plugin that says what
/// it provides is most useful started on demand, and one that does not can never be activated by a subscription;
/// `Restart=on-failure`.
public enum PluginFile: Hashable, Sendable {
    /// A plugin to supervise.
    case plugin(PluginDeclaration)
    /// An empty file or `Enabled=false`: no plugin of this name runs.
    case mask

    /// The extension a plugin file's name ends with.
    public static let fileExtension = ".plugin"

    /// The longest plugin name: `herald.plugin.NAME` must fit the 255 bytes of a name.
    public static let maxNameBytes = Limits.maxNameBytes - "herald.plugin.".utf8.count

    /// The plugin name of a directory entry, or nil when the entry is not a plugin file (its name does not end in
    /// `.plugin`). The name is not validated: see ``validateName(_:)``.
    public static func name(ofFileName fileName: String) -> String? {
        guard fileName.hasSuffix(fileExtension) else { return nil }
        return String(fileName.dropLast(fileExtension.count))
    }

    /// Checks that `name` is one name segment of letters, digits, `-` and `_`, short enough for its status name.
    ///
    /// - Throws: `PluginFileError` with no line, saying what is wrong with the name.
    public static func validateName(_ name: String) throws(PluginFileError) {
        if name.isEmpty { throw PluginFileError(line: nil, "the plugin name (the file name before .plugin) is empty") }
        if name.utf8.count > maxNameBytes {
            throw PluginFileError(
                line: nil,
                "the plugin name is \(name.utf8.count) bytes, the limit is \(maxNameBytes)"
            )
        }
        let valid = name.utf8.allSatisfy { byte in
            byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
        }
        if !valid {
            throw PluginFileError(line: nil, "the plugin name '\(name)' may only have letters, digits, '-' and '_'")
        }
    }

    /// Parses the text of the plugin file `name`.plugin found at `path`.
    ///
    /// - Parameters:
    ///   - name: the plugin's name, from the file name; validated here.
    ///   - path: where the file is, kept in the declaration for `herald plugins`.
    ///   - text: the file's contents.
    /// - Throws: `PluginFileError` for the first problem: a bad name, a line that is not `Key=Value`, a key outside
    ///   `[Plugin]`, an unknown or repeated key, a bad value, or a missing `Exec=`.
    public init(name: String, path: String, text: String) throws(PluginFileError) {
        try Self.validateName(name)
        // A NUL cannot reach a program (argv and envp are C strings: it would cut the value short, silently), and
        // no text file holds one by intent.
        if let nul = text.utf8.firstIndex(of: 0) {
            let line = text.utf8[..<nul].lazy.filter { $0 == UInt8(ascii: "\n") }.count + 1
            throw PluginFileError(line: line, "a NUL byte; a plugin file is text")
        }
        var fields = Fields()
        var section: (name: Substring, line: Int)?
        var lineNumber = 0
        // "\r\n" is one Character in Swift, so it must be named to split on it.
        for rawLine in text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }) {
            lineNumber += 1
            let line = rawLine.trimmingWhitespace()
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            if line.hasPrefix("[") {
                guard line.hasSuffix("]") else {
                    throw PluginFileError(line: lineNumber, "a section header must end with ']': '\(line)'")
                }
                let header = line.dropFirst().dropLast()
                if header != "Plugin" {
                    throw PluginFileError(
                        line: lineNumber,
                        "unknown section '[\(header)]'; the only section is [Plugin]"
                    )
                }
                if let section {
                    throw PluginFileError(
                        line: lineNumber,
                        "a second [Plugin] section (the first is on line \(section.line))"
                    )
                }
                section = (header, lineNumber)
                continue
            }
            guard let equals = line.firstIndex(of: "="), case let key = line[..<equals].trimmingWhitespace(),
                !key.isEmpty
            else {
                throw PluginFileError(line: lineNumber, "expected Key=Value, found '\(line)'")
            }
            guard section != nil else {
                throw PluginFileError(line: lineNumber, "key '\(key)' is outside the [Plugin] section")
            }
            let value = line[line.index(after: equals)...].trimmingWhitespace()
            try fields.set(String(key), String(value), line: lineNumber)
        }
        self = try fields.file(name: name, path: path)
    }
}

extension Substring {
    /// The text without leading and trailing spaces, tabs and carriage returns (a file written on Windows ends its
    /// lines in CR LF).
    func trimmingWhitespace() -> Substring {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\r" }
        guard let start = firstIndex(where: { !isSpace($0) }) else { return self[endIndex...] }
        let end = lastIndex(where: { !isSpace($0) })!
        return self[start...end]
    }
}
