#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes an executable's help, errors and output, and ends the process.
///
/// This is the module's only I/O. It writes with write(2) straight to descriptors 1 and 2, so nothing sits
/// in a stdio buffer when the process exits. It does not touch SIGPIPE: executables ignore that signal
/// themselves, so a closed pipe shows up here as EPIPE.
public enum Terminal {
    /// Writes the whole string to standard output.
    ///
    /// Retries after short writes and EINTR, and waits out EAGAIN if the descriptor was inherited
    /// non-blocking. A reader that went away (EPIPE, as with `| head`) is ignored: the output is no longer
    /// wanted, and that is not an error. Other failures are ignored too, as there is nowhere to report them.
    ///
    /// - Parameter string: The text to write, usually ending with a newline.
    public static func writeStdout(_ string: String) {
        writeFully(string, to: 1)
    }

    /// Writes the whole string to standard error, with the same retries as `writeStdout(_:)`.
    ///
    /// - Parameter string: The text to write, usually ending with a newline.
    public static func writeStderr(_ string: String) {
        writeFully(string, to: 2)
    }

    /// Ends the process with the given status.
    ///
    /// - Parameter code: The exit status.
    public static func exit(_ code: ExitCode) -> Never {
        // The libc exit, not _exit, because other code may have registered atexit handlers or used stdio.
        // Qualified, because inside this enum a bare `exit` is this function.
        #if canImport(Glibc)
        Glibc.exit(code.rawValue)
        #else
        Darwin.exit(code.rawValue)
        #endif
    }

    /// Writes every byte of `string` to `descriptor`, giving up quietly on errors other than EINTR/EAGAIN.
    private static func writeFully(_ string: String, to descriptor: Int32) {
        var string = string
        string.withUTF8 { bytes in
            guard var pointer = bytes.baseAddress else { return }
            var remaining = bytes.count
            while remaining > 0 {
                let written = write(descriptor, pointer, remaining)
                if written > 0 {
                    pointer += written
                    remaining -= written
                    continue
                }
                // write(2) returns 0 only for a zero count; treat it as "no progress possible" rather than
                // reading a stale errno and spinning.
                guard written < 0 else { return }
                switch errno {
                case EINTR:
                    continue
                case EAGAIN, EWOULDBLOCK:
                    var request = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
                    _ = poll(&request, 1, -1)
                default:
                    // EPIPE and the rest: the reader is gone or the descriptor is unusable.
                    return
                }
            }
        }
    }
}
