/// How much of a plugin's output heraldd reads before it stops reading for a while: a plugin that writes faster
/// than that fills its pipe and blocks in `write`, so a flood costs the plugin its time, not the daemon's.
///
/// The budget is ``bytesPerWindow`` in each ``window``; a read that spends it makes ``read(_:now:)`` say when
/// reading may resume, at the end of the window. The default, 1 MiB per 100 ms, is five times what the log's line
/// limit (100 lines of at most 2 KiB a second) can use, and costs heraldd well under a hundredth of a core to read
/// and split, whatever the plugin writes.
public struct OutputBudget: Hashable, Sendable {
    /// The bytes read in one window before reading pauses.
    public let bytesPerWindow: Int
    /// The length of a window.
    public let window: Duration
    private var windowStart: Instant?
    private var spent = 0

    /// Creates a budget with nothing spent.
    public init(bytesPerWindow: Int = 1 << 20, window: Duration = .milliseconds(100)) {
        precondition(bytesPerWindow > 0 && window > .zero, "an output budget needs a positive size and window")
        self.bytesPerWindow = bytesPerWindow
        self.window = window
    }

    /// `count` bytes were read at `now`.
    ///
    /// - Returns: the instant to resume reading when this read spent the window's budget, else nil (read on).
    public mutating func read(_ count: Int, now: Instant) -> Instant? {
        if let start = windowStart, now - start < window {
            spent += count
        } else {
            windowStart = now
            spent = count
        }
        guard spent >= bytesPerWindow, let start = windowStart else { return nil }
        let resume = start + window
        windowStart = nil
        spent = 0
        return resume
    }
}
