/// Counts the bytes of every queue's buffer: the daemon's memory for queued output, which
/// `--max-queued-bytes` bounds.
///
/// Each `FrameStore` buffer adds its capacity when it is allocated and takes it back when it is freed, so the
/// count is exactly the memory the queues hold, whichever queue (or copy of one) frees it last.
public final class OutputAccounting {
    // Behind a pointer rather than a stored `var`: the broker reads it after every frame, and a class's
    // stored property is checked for exclusive access at run time on every read (~60 instructions a post).
    private let counter = UnsafeMutablePointer<Int>.allocate(capacity: 1)

    /// Bytes of queue buffers allocated now.
    public var bytes: Int { counter.pointee }

    /// Creates a count of zero bytes.
    public init() {
        counter.initialize(to: 0)
    }

    deinit {
        counter.deallocate()
    }

    /// Adds the capacity of a buffer allocated (`count` > 0) or freed (`count` < 0).
    func add(_ count: Int) {
        counter.pointee += count
        assert(counter.pointee >= 0, "more queue memory freed than was allocated")
    }
}
