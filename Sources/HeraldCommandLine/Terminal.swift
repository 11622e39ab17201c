import HeraldPosix

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes an executable's output, help and errors, and ends the process.
///
/// Every Herald executable writes standard output and standard error through here, with HeraldPosix's one
/// write-everything loop (``HeraldPosix/FileDescriptor/writeAll(_:waitingWhenFull:)``): write(2) straight to
/// descriptors 1 and 2, so nothing sits in a stdio buffer when the process exits and a script reading a pipe sees
/// each line as soon as it is written. It does not touch SIGPIPE: ``runMain(_:run:)`` ignores that signal, so a
/// closed pipe shows up here as EPIPE.
public enum Terminal {
    /// Writes the whole string to standard output, and says whether anyone is still reading it.
    ///
    /// Retries after short writes and EINTR, and waits out EAGAIN if the descriptor was inherited non-blocking.
    ///
    /// - Parameter string: The text to write, usually ending with a newline.
    /// - Returns: `false` if standard output is closed (EPIPE, as after `| head -1`) or otherwise unusable: a
    ///   command that streams output should stop and end successfully, as a program in a pipeline does. Help text
    ///   ignores it: the output is no longer wanted, and that is not an error.
    @discardableResult
    public static func writeStdout(_ string: String) -> Bool {
        write(string, to: STDOUT_FILENO)
    }

    /// Writes `bytes` as they are to standard output, for payloads that need not be UTF-8; see ``writeStdout(_:)``.
    ///
    /// - Returns: `false` if standard output is closed or otherwise unusable.
    @discardableResult
    public static func writeStdout(_ bytes: [UInt8]) -> Bool {
        write(bytes, to: STDOUT_FILENO)
    }

    /// Writes the whole string to standard error, with the same retries as ``writeStdout(_:)``.
    ///
    /// - Parameter string: The text to write, usually ending with a newline.
    /// - Returns: `false` if standard error is closed or unusable; there is nowhere left to report that.
    @discardableResult
    public static func writeStderr(_ string: String) -> Bool {
        write(string, to: STDERR_FILENO)
    }

    /// Ends the process with the given status, running `atexit` handlers and flushing stdio.
    ///
    /// - Parameter code: The exit status.
    public static func exit(_ code: ExitCode) -> Never {
        // Qualified, because inside this enum a bare `exit` is this function.
        #if canImport(Glibc)
        Glibc.exit(code.rawValue)
        #else
        Darwin.exit(code.rawValue)
        #endif
    }

    /// Ends the process at once with the given status, without `atexit` handlers: for leaving while other threads
    /// may still be running the library (an interrupted command whose connection is closing).
    ///
    /// - Parameter code: The exit status.
    public static func exitImmediately(_ code: ExitCode) -> Never {
        _exit(code.rawValue)
    }

    /// Whether the process was given standard output and error; asked once, as nothing here closes them.
    private static let isStdoutOpen = FileDescriptor.isOpen(STDOUT_FILENO)
    private static let isStderrOpen = FileDescriptor.isOpen(STDERR_FILENO)

    private static func write(_ string: String, to descriptor: Int32) -> Bool {
        var string = string
        return string.withUTF8 { write(UnsafeRawBufferPointer($0), to: descriptor) }
    }

    private static func write(_ bytes: [UInt8], to descriptor: Int32) -> Bool {
        bytes.withUnsafeBytes { write($0, to: descriptor) }
    }

    private static func write(_ bytes: UnsafeRawBufferPointer, to descriptor: Int32) -> Bool {
        // A closed standard stream is a reader that is gone, not a bug of ours (which EBADF would trap as).
        guard descriptor == STDOUT_FILENO ? isStdoutOpen : isStderrOpen else { return false }
        // Borrow the standard stream for the call and give it back unclosed: the process owns it.
        let stream = FileDescriptor(owning: descriptor)
        let written = Result { () throws(SystemError) in try stream.writeAll(bytes, waitingWhenFull: true) }
        _ = stream.release()
        // A failure is EPIPE or worse: the reader is gone or the descriptor is unusable.
        return (try? written.get()) != nil
    }
}
