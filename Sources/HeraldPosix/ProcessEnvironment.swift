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

    /// The value of `name`, or nil when it is not set.
    public static func value(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }
}
