internal import CHeraldShim

/// The name the kernel shows for a thread (`/proc/PID/task/TID/comm`, top, perf).
public enum ThreadName {
    /// Names the calling thread; Linux keeps the first 15 bytes.
    ///
    /// Foundation's `Thread.name`, set before `start()`, does not reliably reach the kernel on Linux: the thread then
    /// shows the name of whichever thread started it, often a dispatch worker's.
    public static func setCurrent(_ name: String) {
        let truncated = String(decoding: name.utf8.prefix(15), as: UTF8.self)
        _ = herald_set_current_thread_name(truncated)
    }
}
