/// How many notifications a stream holds for a consumer that has not caught up, and which ones it loses when full.
///
/// A lost notification is never lost silently: the stream carries a `herald.dropped` notice
/// (``HeraldNotification/Notice/dropped(count:firstSequence:lastSequence:)``) with the exact count.
public enum BufferingPolicy: Sendable, Hashable {
    /// Keep the oldest `limit` notifications and drop new ones while full. The drop notice comes exactly where the
    /// gap is: before the first notification accepted after it.
    case bufferingOldest(Int)
    /// Keep the newest `limit` notifications and drop the oldest while full. The drop notice comes before the next
    /// notification accepted; its count is exact, but since the gap opens at the front of the buffer, the notice is
    /// not at the gap's position.
    case bufferingNewest(Int)
    /// Keep everything; memory grows for as long as the consumer lags.
    case unbounded

    /// `bufferingOldest(4096)`: bounded, so a stuck consumer costs bounded memory, and large enough for bursts.
    public static var `default`: BufferingPolicy { .bufferingOldest(4096) }

}
