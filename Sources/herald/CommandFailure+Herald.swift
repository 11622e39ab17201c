import Herald
import HeraldCommandLine

extension CommandFailure {
    /// Maps a library error to an exit status.
    ///
    /// A daemon that can't be reached, goes away or stops answering is `unavailable` (69), whatever the library
    /// calls it, because a script reacts to all three the same way: start or restart heraldd. Names and patterns are
    /// checked before connecting, so the daemon rejecting one is a usage error that slipped through.
    init(_ error: HeraldError) {
        switch error.code {
        case .daemonUnavailable, .disconnected, .timedOut:
            self.init(status: .unavailable, message: error.message)
        case .invalidName, .invalidPattern, .reservedName:
            self.init(status: .usage, message: error.message, showsUsage: true)
        default:
            self.init(status: .failure, message: error.message)
        }
    }
}
