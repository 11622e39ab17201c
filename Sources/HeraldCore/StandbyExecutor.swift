import HeraldPosix

/// The task executor, on one thread, shared by every ``Herald`` of the process, for the jobs no reader thread can
/// run: between connections (reconnecting) and after a Herald closes.
///
/// Those jobs used to go to the global concurrent executor, whose first job starts libdispatch's worker pool; its
/// monitor then wakes the process once a second for as long as it lives, so a client that had reconnected once could
/// never be idle again (herald-dbus-bridge after heraldd restarts). A ``ThreadExecutor`` starts its thread with its
/// first job and sleeps while it has none, so it wakes only when there is work.
///
/// One thread runs them all in turn, which suits the short steps of a reconnection; a job must not block the thread
/// waiting for another job (as on ``Herald/taskExecutor``).
enum StandbyExecutor {
    /// The one executor every Herald shares.
    static let shared = ThreadExecutor(name: "herald-standby")
}
