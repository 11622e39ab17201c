/// What `stat()` says about a plugin file or executable that matters for trusting it: its owner and mode.
///
/// The owner stat()s; the rule is this pure function of the values, the same rule heraldd applies to its socket
/// directory.
public struct FileFacts: Hashable, Sendable {
    /// `st_uid`.
    public var owner: UInt32
    /// `st_mode`; only the permission bits are looked at.
    public var mode: UInt32

    /// Creates the facts of one file.
    public init(owner: UInt32, mode: UInt32) {
        self.owner = owner
        self.mode = mode
    }

    /// Why a file with these facts must not be trusted by a daemon running as `daemonUID`, or nil when it may be.
    ///
    /// A file is trusted when it belongs to the daemon's user or to root and no one else can write it: otherwise
    /// another user could make the daemon run a program of their choosing as this user.
    ///
    /// - Returns: "owned by uid 1001, not by 1000 or root", or "writable by group or others (mode 0664)", or nil.
    public func trustProblem(daemonUID: UInt32) -> String? {
        if owner != daemonUID && owner != 0 {
            return "owned by uid \(owner), not by \(daemonUID) or root"
        }
        if mode & 0o022 != 0 {
            return "writable by group or others (mode \(Self.octal(mode & 0o7777)))"
        }
        return nil
    }

    /// `mode` as four octal digits, as `chmod` and `stat -c %a` people know it.
    static func octal(_ mode: UInt32) -> String {
        let digits = String(mode, radix: 8)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }
}
