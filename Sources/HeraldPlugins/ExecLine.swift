/// Splits an `Exec=` value into words, with the quoting of a desktop file's `Exec` key and no field codes.
///
/// - Words are separated by spaces and tabs.
/// - Inside double quotes, `\"`, `\\`, `\$` and `` \` `` stand for the character; any other backslash is kept.
/// - Inside single quotes every character stands for itself, up to the next single quote.
/// - Outside quotes, a backslash makes the next character literal (`a\ b` is one word).
/// - Quoted parts join the text around them: `--name="a b"` is the one word `--name=a b`; `""` is an empty word.
///
/// There is no shell: no variables, globbing, pipes or `~`. A program that needs them names a script.
enum ExecLine {
    /// The words of `text`.
    ///
    /// - Throws: a reason ("unterminated double quote") when a quote is not closed or the text ends in a lone
    ///   backslash.
    static func split(_ text: String) throws(ExecLineError) -> [String] {
        var words: [String] = []
        var word = ""
        // Whether a word has begun, so `""` makes an empty word but spaces make none.
        var inWord = false
        var iterator = text.unicodeScalars.makeIterator()
        while let scalar = iterator.next() {
            switch scalar {
            case " ", "\t":
                if inWord {
                    words.append(word)
                    word = ""
                    inWord = false
                }
            case "\\":
                guard let next = iterator.next() else { throw ExecLineError("ends in a lone backslash") }
                word.unicodeScalars.append(next)
                inWord = true
            case "'":
                inWord = true
                var closed = false
                while let inner = iterator.next() {
                    if inner == "'" {
                        closed = true
                        break
                    }
                    word.unicodeScalars.append(inner)
                }
                if !closed { throw ExecLineError("unterminated single quote") }
            case "\"":
                inWord = true
                var closed = false
                while let inner = iterator.next() {
                    if inner == "\"" {
                        closed = true
                        break
                    }
                    if inner == "\\" {
                        guard let escaped = iterator.next() else { break }
                        if !["\"", "\\", "$", "`"].contains(escaped) { word.unicodeScalars.append(inner) }
                        word.unicodeScalars.append(escaped)
                    } else {
                        word.unicodeScalars.append(inner)
                    }
                }
                if !closed { throw ExecLineError("unterminated double quote") }
            default:
                word.unicodeScalars.append(scalar)
                inWord = true
            }
        }
        if inWord { words.append(word) }
        return words
    }
}

/// Why an `Exec=` value could not be split.
struct ExecLineError: Error {
    let reason: String

    init(_ reason: String) {
        self.reason = reason
    }
}
