internal import CHeraldShim

/// The process's limit on open descriptors (`RLIMIT_NOFILE`), which bounds how many connections a server can hold.
public enum DescriptorLimit {
    /// Raises the soft limit to the hard one, as a server that holds one descriptor per client should (the soft
    /// limit is often 1,024 for compatibility with `select`, which a server on epoll does not use), and returns
    /// the soft limit in force afterwards.
    ///
    /// - Returns: the soft limit, `Int.max` when unlimited; nil when the limits cannot be read.
    public static func raiseToHardLimit() -> Int? {
        var soft: UInt64 = 0
        var hard: UInt64 = 0
        guard herald_raise_descriptor_limit(&soft, &hard) == 0 else {
            return nil
        }
        return soft >= UInt64(Int.max) ? Int.max : Int(soft)
    }
}
