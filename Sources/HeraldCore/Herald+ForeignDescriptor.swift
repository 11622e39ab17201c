/// A descriptor of the app's own that a ``Herald``'s reader thread watches along with the daemon's socket
/// (``Herald/watchForeignDescriptor(_:)``): when it has input, the thread calls ``onReadable`` itself.
///
/// For a client that bridges the Herald to another connection (the MQTT bridge): the input of that connection is
/// read, and handled by tasks on ``Herald/taskExecutor``, on the one thread, so that an answer does not go from one
/// thread to another and back (Benchmarks/README.md, issue 26).
package final class ForeignDescriptor: Sendable {
    /// The descriptor, non-blocking. It must stay open as long as this object lives, which a reader thread waiting
    /// on it keeps alive until its wait returns, even after the watch was stopped: the simplest way is for
    /// ``onReadable`` to hold what closes the descriptor as it is freed.
    package let descriptor: Int32
    /// Called on the reader thread when the descriptor has input, end of file or an error. It must read the input, or
    /// stop the watch (a descriptor left readable is reported again at once), and must not block.
    package let onReadable: @Sendable () -> Void
    /// Called, on any thread, when a reader thread may have started or stopped watching the descriptor; the owner
    /// asks ``Herald/isWatchingForeignDescriptor(_:)`` then, and reads the descriptor itself while none watches it
    /// (while the Herald reconnects, after it closed, or for a Herald in a ``Herald/ReaderGroup``, whose threads do
    /// not watch foreign descriptors).
    package let onWatchingChanged: @Sendable () -> Void

    /// Describes a descriptor to watch.
    package init(
        descriptor: Int32,
        onReadable: @escaping @Sendable () -> Void,
        onWatchingChanged: @escaping @Sendable () -> Void
    ) {
        self.descriptor = descriptor
        self.onReadable = onReadable
        self.onWatchingChanged = onWatchingChanged
    }
}

extension Herald {
    /// Has the Herald's reader thread watch `foreign` along with the daemon's socket, in place of the descriptor
    /// watched before (nil: none from now on). Whatever reconnects, it stays registered until replaced.
    ///
    /// After this returns, `foreign.onWatchingChanged` has been called once, and is called again each time a reader
    /// thread starts or stops watching it. A reader thread waiting on the descriptor replaced is woken to wait on the
    /// new one, and calls the old one's `onReadable` no more.
    package func watchForeignDescriptor(_ foreign: ForeignDescriptor?) {
        connection.executor.watch(foreign)
    }

    /// Stops watching the foreign descriptor if it is `descriptor` (one registered is open, so no other has its
    /// number), and does not call its `onWatchingChanged`: for its owner, which knows. Safe on the reader thread,
    /// in `onReadable`, which is not called again for it after this returns.
    package func stopWatchingForeignDescriptor(_ descriptor: Int32) {
        connection.executor.stopWatching(descriptor)
    }

    /// Whether a reader thread of this Herald watches `foreign` now.
    package func isWatchingForeignDescriptor(_ foreign: ForeignDescriptor) -> Bool {
        connection.executor.isWatching(foreign)
    }
}
