/// Whether heraldd lets input gather before it next waits for events, as a network card moderates its interrupts.
///
/// When heraldd keeps up with clients that write one post per `send`, it blocks after every turn, each post wakes it
/// on the other core, and its turns stay small: the C client's fan-out 1 settled into a mode costing twice as much
/// per post on both sides. Sleeping briefly before the wait, while it is not on the epoll wait queue, lets those
/// writes gather into one read. So heraldd sleeps after a busy turn: one that handled at least ``framesToModerate``
/// frames and ended less than ``busyWithin`` nanoseconds after its last blocking wait returned (many frames, in
/// small turns; at fan-out 10 turns are long, and sleeping after each cost 3 %).
///
/// Only while input trickles in, though: from a busy turn that averaged fewer than ``framesPerReadToStart`` frames
/// per read, until a turn with fewer than ``framesToModerate`` frames says the load is over. A client that writes
/// its posts in batches (the Swift library coalesces them) sends reads of many frames, and a sleep only delays them:
/// herald-bench fan-out 1 was 2.27M deliveries/s with the sleeps and 2.58M without. The trickle is remembered across
/// turns because the sleeps and long turns make the reads after them large: judged turn by turn, the C client's
/// named lost half its sleeps and fell from 1.03M to 0.68M posts/s.
///
/// Pure: the daemon tells it what each turn did and does what it says.
public struct WakeModeration: Sendable {
    /// The frames a turn must have handled to count as busy; fewer, and the load is over.
    public static let framesToModerate = 8
    /// How soon after the last blocking wait a busy turn must end, in nanoseconds.
    public static let busyWithin: UInt64 = 100_000
    /// Input trickles in while a busy turn averages fewer frames than this per read.
    public static let framesPerReadToStart = 4

    /// Whether input has been seen trickling in since the load began.
    public private(set) var isTrickling = false

    public init() {}

    /// A turn ended.
    ///
    /// - Parameters:
    ///   - frames: the frames it handed to the broker.
    ///   - reads: the reads of connections that returned bytes.
    ///   - sinceWake: nanoseconds from the last blocking wait's return to now.
    /// - Returns: whether to let input gather (sleep) before the next wait.
    public mutating func turnEnded(frames: Int, reads: Int, sinceWake: UInt64) -> Bool {
        guard frames >= Self.framesToModerate else {
            isTrickling = false
            return false
        }
        if frames < reads * Self.framesPerReadToStart { isTrickling = true }
        return isTrickling && sinceWake < Self.busyWithin
    }
}
