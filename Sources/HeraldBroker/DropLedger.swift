public import HeraldWire

/// What a queue owes its connection for the live frames it dropped: the drops not yet turned into a `DROPPED`
/// notice, and the counts of the queued notice that has not started, which later drops merge into.
///
/// wire.md: every drop is reported exactly, by count and sequence range, in a notice placed where the gap is (right
/// after the frame in flight). While a notice is queued and not begun, one notice is enough: the owner merges the
/// owed drops into it (`takeOwed(mergingOpenNotice:)`). Once the notice starts going out it is closed
/// (`openNoticeStarted()`), and later drops make a new one.
@usableFromInline
struct DropLedger {
    /// Drops not yet turned into a queued notice.
    @usableFromInline private(set) var owed: Frame.Dropped?
    /// The counts of the queued notice that has not started, if there is one.
    private(set) var open: Frame.Dropped?

    /// Records that the live frame `sequence` was dropped.
    mutating func record(_ sequence: UInt64) {
        precondition(sequence != 0, "a dropped live NOTIFY has a sequence number from 1")
        if var owed {
            owed.count += 1
            owed.firstSequence = min(owed.firstSequence, sequence)
            owed.lastSequence = max(owed.lastSequence, sequence)
            self.owed = owed
        } else {
            owed = Frame.Dropped(count: 1, firstSequence: sequence, lastSequence: sequence)
        }
    }

    /// Takes the owed drops for a new notice, which becomes the open one.
    ///
    /// - Parameter mergingOpenNotice: whether the open notice is where the new one goes, so the new one replaces it
    ///   and carries its counts too.
    /// - Returns: The new notice's counts, or nil when nothing is owed.
    mutating func takeOwed(mergingOpenNotice: Bool) -> Frame.Dropped? {
        guard var notice = owed else { return nil }
        owed = nil
        if mergingOpenNotice {
            guard let earlier = open else { preconditionFailure("merging into a notice that is not open") }
            notice.count += earlier.count
            notice.firstSequence = min(notice.firstSequence, earlier.firstSequence)
            notice.lastSequence = max(notice.lastSequence, earlier.lastSequence)
        }
        open = notice
        return notice
    }

    /// The open notice started going out (or left the queue): later drops need a notice of their own.
    mutating func openNoticeStarted() {
        open = nil
    }

    /// Forgets everything owed: the connection is being closed.
    mutating func removeAll() {
        owed = nil
        open = nil
    }
}
