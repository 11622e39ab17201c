#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// This process's environment, read without Foundation.
public enum ProcessEnvironment {
    /// Every `KEY=VALUE` entry, in the order `environ` holds them.
    public static func entries() -> [String] {
        var entries: [String] = []
        var pointer = environ
        while let entry = pointer.pointee {
            entries.append(String(cString: entry))
            pointer += 1
        }
        return entries
    }

    /// Every variable by name, as Foundation's `ProcessInfo.environment` gives them: an entry without `=` is left
    /// out, and of two entries with one name the first wins, as `getenv` finds it.
    public static func variables() -> [String: String] {
        var variables: [String: String] = [:]
        for entry in entries() {
            guard let equals = entry.utf8.firstIndex(of: UInt8(ascii: "=")) else { continue }
            let name = String(entry[..<equals])
            if variables[name] == nil {
                variables[name] = String(entry[entry.utf8.index(after: equals)...])
            }
        }
        return variables
    }

    /// The value of `name`, or nil when it is not set.
    public static func value(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }
}
