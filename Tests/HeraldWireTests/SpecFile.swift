/// Reads Protocols/wire.md from the source tree. Tests locate it from this file's path, so they run
/// from any working directory.
enum SpecFile {
    static var wireSpecPath: String {
        var components = "\(#filePath)".split(separator: "/", omittingEmptySubsequences: false)
        components.removeLast(3)  // Tests/HeraldWireTests/SpecFile.swift
        return components.joined(separator: "/") + "/Protocols/wire.md"
    }

    /// The vectors of wire.md: each `#### \`name\`` heading followed by a ```hex block.
    static func hexVectors() -> [String: [UInt8]] {
        let text = readFile(wireSpecPath)
        var vectors: [String: [UInt8]] = [:]
        var currentName: String?
        var inHex = false
        var bytes: [UInt8] = []
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("#### `") {
                currentName = String(line.dropFirst(6).prefix { $0 != "`" })
            } else if line == "```hex" {
                inHex = true
                bytes = []
            } else if inHex && line == "```" {
                inHex = false
                if let name = currentName { vectors[name] = bytes }
                currentName = nil
            } else if inHex {
                let digits = Array(line.filter { !$0.isWhitespace })
                precondition(digits.count % 2 == 0, "odd hex digit count in wire.md vector \(currentName ?? "?")")
                for index in stride(from: 0, to: digits.count, by: 2) {
                    bytes.append(UInt8(String(digits[index...index + 1]), radix: 16)!)
                }
            }
        }
        return vectors
    }

    private static func readFile(_ path: String) -> String {
        guard let file = fopen(path, "r") else { fatalError("cannot open \(path)") }
        defer { fclose(file) }
        var data: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = fread(&chunk, 1, chunk.count, file)
            if count == 0 { break }
            data.append(contentsOf: chunk[0..<count])
        }
        return String(decoding: data, as: UTF8.self)
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
