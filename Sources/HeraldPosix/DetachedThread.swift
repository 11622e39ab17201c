#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A kernel thread that runs one closure and ends with it, started without Foundation.
///
/// Foundation's `Thread` is the only reason some modules would link the whole of Foundation (and ICU), several MiB
/// of resident pages in a small bridge. This is `pthread_create` with the thread detached: nothing joins it, and its
/// resources go back to the system when the closure returns.
public enum DetachedThread {
    /// Starts a thread named `name` that runs `body` and then ends.
    ///
    /// The name is set from the new thread itself, before `body` runs (see ``ThreadName``); Linux keeps its first 15
    /// bytes. The thread gets the default stack size (`ulimit -s`, reserved, not resident).
    ///
    /// - Parameters:
    ///   - name: the name the kernel shows for the thread (`/proc/PID/task/TID/comm`).
    ///   - body: what the thread runs.
    /// - Precondition: the system can create a thread; without one (`EAGAIN`: the process or user thread limit) the
    ///   caller could only hang waiting for work that never runs, so this traps with the reason instead.
    public static func start(name: String, _ body: @escaping @Sendable () -> Void) {
        let context = Unmanaged.passRetained(Context(name: name, body: body)).toOpaque()
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        #if canImport(Darwin)
        var thread: pthread_t? = nil
        #else
        var thread = pthread_t()
        #endif
        #if canImport(Darwin)
        let result = pthread_create(&thread, &attributes, { pointer in DetachedThread.run(pointer) }, context)
        #else
        let result = pthread_create(&thread, &attributes, { pointer in DetachedThread.run(pointer!) }, context)
        #endif
        guard result == 0 else {
            Unmanaged<Context>.fromOpaque(context).release()
            preconditionFailure("cannot start the thread \(name): \(Errno(rawValue: result))")
        }
    }

    /// What the new thread runs, handed over through `pthread_create`'s one pointer.
    private final class Context {
        let name: String
        let body: @Sendable () -> Void

        init(name: String, body: @escaping @Sendable () -> Void) {
            self.name = name
            self.body = body
        }
    }

    fileprivate static func run(_ pointer: UnsafeMutableRawPointer) -> UnsafeMutableRawPointer? {
        let context = Unmanaged<Context>.fromOpaque(pointer).takeRetainedValue()
        ThreadName.setCurrent(context.name)
        context.body()
        return nil
    }
}
