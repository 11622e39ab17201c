import HeraldPosix
import HeraldWire
import Synchronization

/// The refusals of posts nobody awaited: a version 2 daemon answers each refused post (Protocols/wire.md, "Refusals
/// and fatal errors"), and a post made with ``Herald/post(_:payload:retain:origin:)`` has no caller left to throw
/// to. They are counted for the app (``Herald/refusedPosts``) and logged at most once a second, so a flood of them is
/// a few lines, each saying how many it stands for.
///
/// One ledger serves a ``Herald`` across its reconnections.
final class RefusalLedger: Sendable {
    private struct State {
        var count = 0
        var byCode: [UInt16: Int] = [:]
        var unlogged = 0
        var lastLogged: UInt64?
    }

    private let state = Mutex(State())

    /// Refused posts nobody awaited, since the Herald connected.
    var count: Int { state.withLock { $0.count } }

    /// ``count`` by the wire code of the refusal.
    var countsByCode: [UInt16: Int] { state.withLock { $0.byCode } }

    /// Counts a refused post and logs it, or leaves it to the next line when one was logged within the second.
    func record(_ refusal: WireError, logger: Herald.Logger?) {
        let now = SystemClock.monotonicNanoseconds()
        let report = state.withLock { state -> Int? in
            state.count += 1
            state.byCode[refusal.code.rawValue, default: 0] += 1
            state.unlogged += 1
            if let last = state.lastLogged, now - last < 1_000_000_000 { return nil }
            state.lastLogged = now
            defer { state.unlogged = 0 }
            return state.unlogged
        }
        guard let report, let logger else { return }
        let what = report == 1 ? "a post" : "\(report) posts"
        logger.log(.warning, "heraldd refused \(what) nobody awaited; the latest: \(refusal.code): \(refusal.reason)")
    }
}
