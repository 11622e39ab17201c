extension String {
    /// Splits the text into lines no wider than `width` columns, breaking at spaces.
    ///
    /// Existing line breaks are kept, and a line that already fits is kept verbatim so indented examples in a
    /// discussion survive. A longer line is filled word by word; a single word wider than `width` gets a line
    /// of its own rather than being cut. Width is counted in characters, which is right for the ASCII that
    /// help text is written in.
    func wrappedLines(toWidth width: Int) -> [String] {
        var lines: [String] = []
        for paragraph in split(separator: "\n", omittingEmptySubsequences: false) {
            guard paragraph.count > width else {
                lines.append(String(paragraph))
                continue
            }
            var line = ""
            for word in paragraph.split(separator: " ") {
                if line.isEmpty {
                    line = String(word)
                } else if line.count + 1 + word.count <= width {
                    line += " " + word
                } else {
                    lines.append(line)
                    line = String(word)
                }
            }
            lines.append(line)
        }
        return lines
    }

    /// The text with every line after the first indented by `count` spaces, to sit under a prefix such as
    /// `Usage: `.
    func hangingIndented(by count: Int) -> String {
        split(separator: "\n", omittingEmptySubsequences: false)
            .enumerated()
            .map {
                $0.offset == 0 || $0.element.isEmpty
                    ? String($0.element) : String(repeating: " ", count: count) + $0.element
            }
            .joined(separator: "\n")
    }
}
