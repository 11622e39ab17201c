internal import CHeraldShim

/// The process's limit on open descriptors (`RLIMIT_NOFILE`), which bounds how many connections a server can hold.
public struct DescriptorLimit: Sendable, Equatable {
    /// The limit in force: opening a descriptor numbered at or past it fails with EMFILE.
    public var soft: UInt64
    /// The ceiling an unprivileged process may raise ``soft`` to.
    public var hard: UInt64

    /// Creates a limit from its two values.
    public init(soft: UInt64, hard: UInt64) {
        self.soft = soft
        self.hard = hard
    }

    /// Raises the soft limit to the hard one, as a server that uses epoll (never `select`) may.
    ///
    /// Desktop sessions commonly start processes with a soft limit of 1024 under a hard limit hundreds of times
    /// larger, kept low only for programs that still use `select`. A failure to raise it is not an error: the
    /// limits then stay as they were, and the result says so. Children inherit the raised limit.
    ///
    /// - Returns: the limits in force afterwards.
    /// - Throws: ``SystemError`` when the limits cannot even be read.
    public static func raiseSoftToHard() throws(SystemError) -> DescriptorLimit {
        var soft: UInt64 = 0
        var hard: UInt64 = 0
        _ = try completedSyscall("raise the descriptor limit (RLIMIT_NOFILE)") {
            herald_raise_descriptor_limit(&soft, &hard)
        }
        return DescriptorLimit(soft: soft, hard: hard)
    }

    /// The limits in force now.
    ///
    /// - Throws: ``SystemError`` when they cannot be read.
    public static func current() throws(SystemError) -> DescriptorLimit {
        var soft: UInt64 = 0
        var hard: UInt64 = 0
        _ = try completedSyscall("read the descriptor limit (RLIMIT_NOFILE)") {
            herald_descriptor_limit(&soft, &hard)
        }
        return DescriptorLimit(soft: soft, hard: hard)
    }

    /// The soft limit as an `Int`, `Int.max` when unlimited.
    public var softCount: Int { soft >= UInt64(Int.max) ? Int.max : Int(soft) }
}
