/// Where the fields of a frame lie, in bytes from the start of the frame (its `length` prefix): the header of every
/// frame (wire.md, "Frames"), and the fixed fields of `NOTIFY`, the one frame the daemon and the library read and
/// write in place rather than through `Frame`.
///
/// Each offset is the previous field's plus its size, written out as a literal so that it is a constant wherever it
/// is read, in this module or another (`FrameLayoutTests` checks the sums). This is the one place those offsets are
/// written down. `Frame.encode(to:)` and `FrameDecoder` check theirs against
/// it, `Frame.Notify.encodeLive` and ``NotifyView`` use it, and the broker's queue reads a queued `NOTIFY`'s sequence
/// number and name by it. `WireVectorTests` checks it against wire.md's `notify` vectors.
public enum FrameLayout {
    /// The `length` field (u32): the bytes that follow it.
    public static let length = 0
    /// The size of the `length` field: a frame is `length` plus this many bytes.
    public static let lengthSize = 4
    /// The `type` byte.
    public static let type = 4
    /// The `flags` byte.
    public static let flags = 5
    /// Where the body starts: the header's size, `frameHeaderSize`.
    public static let body = 6

    /// The fields of a `NOTIFY` frame (wire.md, "`NOTIFY`"): fixed fields, then the name's bytes, then the payload
    /// to the end of the frame.
    public enum Notify {
        /// `sequence` (u64): the post's daemon-wide number.
        public static let sequence = 6
        /// `time` (u64): when the daemon received the post, in nanoseconds since the Unix epoch.
        public static let time = 14
        /// `pid` (i32): the sender's process id.
        public static let pid = 22
        /// `uid` (u32): the sender's user id.
        public static let uid = 26
        /// `gid` (u32): the sender's group id.
        public static let gid = 30
        /// `subscription` (u32): 0 for a live post, else the subscription or request a retained value answers.
        public static let subscription = 34
        /// The `u8` length of the `name` (`str8`).
        public static let nameLength = 38
        /// The first byte of the name.
        public static let name = 39
        /// The body's bytes before the name's: the fixed fields and the name's length byte.
        public static let fixedBodySize = 33

        /// Where the payload starts after a name of `nameCount` bytes.
        @inlinable
        public static func payload(nameCount: Int) -> Int {
            name + nameCount
        }

        /// The size of a whole `NOTIFY` frame, header included, for a name and payload of these sizes.
        @inlinable
        public static func frameSize(nameCount: Int, payloadCount: Int) -> Int {
            name + nameCount + payloadCount
        }
    }
}
