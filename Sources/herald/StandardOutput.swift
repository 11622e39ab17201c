import HeraldPosix

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes the command's output to standard output and says whether anyone is still reading it.
///
/// `Terminal.writeStdout` ignores EPIPE on purpose, which suits help text. `herald observe | head -1` needs the
/// opposite: once `head` has exited, the next write fails with EPIPE (the executable ignores SIGPIPE) and observe
/// must stop rather than run on with nobody reading. Each call is one or more write(2)s with no stdio buffer in
/// between, so a script reading the pipe sees every line as soon as it is printed.
enum StandardOutput {
    /// Writes the whole string.
    ///
    /// - Returns: `false` if standard output is closed (EPIPE) or otherwise unusable; the caller should stop
    ///   producing output and end successfully, as a program in a pipeline does.
    @discardableResult
    static func write(_ text: String) -> Bool {
        write(Array(text.utf8))
    }

    /// Writes all of `bytes`, retrying after short writes, EINTR and (for a descriptor inherited non-blocking)
    /// EAGAIN.
    ///
    /// - Returns: `false` if standard output is closed (EPIPE) or otherwise unusable.
    @discardableResult
    static func write(_ bytes: [UInt8]) -> Bool {
        // Borrow descriptor 1 for the call and give it back unclosed: the process owns it, not this type.
        let descriptor = FileDescriptor(owning: STDOUT_FILENO)
        let written = writeAll(bytes, to: descriptor)
        _ = descriptor.release()
        return written
    }

    private static func writeAll(_ bytes: [UInt8], to descriptor: borrowing FileDescriptor) -> Bool {
        bytes.withUnsafeBytes { buffer in
            var remaining = buffer[...]
            while !remaining.isEmpty {
                let result: IOResult<Int>
                do throws(SystemError) {
                    result = try descriptor.write(UnsafeRawBufferPointer(rebasing: remaining))
                } catch {
                    return false
                }
                switch result {
                case .processed(let count):
                    // write(2) returns 0 only for an empty request; never spin on it.
                    guard count > 0 else { return false }
                    remaining = remaining.dropFirst(count)
                case .wouldBlock:
                    var request = pollfd(fd: descriptor.rawValue, events: Int16(POLLOUT), revents: 0)
                    _ = poll(&request, 1, -1)
                }
            }
            return true
        }
    }
}
