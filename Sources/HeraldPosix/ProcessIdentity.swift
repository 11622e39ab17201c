#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Who this process is.
public enum ProcessIdentity {
    /// The real user ID (getuid): the user who started the process, used to name per-user paths.
    public static func currentUID() -> UInt32 {
        getuid()
    }

    /// The effective user ID (geteuid): the user whose permissions apply, and who owns files this process creates.
    public static func effectiveUID() -> UInt32 {
        geteuid()
    }

    /// The process ID (getpid).
    public static func currentPID() -> Int32 {
        getpid()
    }

    /// The real group ID of this process.
    public static func currentGID() -> UInt32 {
        getgid()
    }

    /// The effective group ID (getegid): with ``effectiveUID()``, what `SO_PEERCRED` reports for this process.
    public static func effectiveGID() -> UInt32 {
        getegid()
    }
}
