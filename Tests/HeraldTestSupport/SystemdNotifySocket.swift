import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The service manager's side of sd_notify for tests: an `AF_UNIX` datagram socket bound to a path or an abstract
/// address, which a daemon started with `NOTIFY_SOCKET=<address>` sends its `READY=1` and `STOPPING=1` to.
public final class SystemdNotifySocket: Sendable {
    /// The address as `$NOTIFY_SOCKET` spells it: a path, or `@name` for an abstract address.
    public let address: String
    private let descriptor: Int32

    /// Binds a datagram socket to `address`.
    ///
    /// - Throws: `SessionTools.Missing` describing the failed call.
    public init(address: String) throws {
        self.address = address
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SessionTools.Missing(description: "socket(AF_UNIX, SOCK_DGRAM): errno \(errno)") }
        var storage = sockaddr_un()
        storage.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(address.utf8)
        let abstract = bytes.first == UInt8(ascii: "@")
        if abstract { bytes[0] = 0 }
        precondition(bytes.count < MemoryLayout.size(ofValue: storage.sun_path), "address too long: \(address)")
        withUnsafeMutableBytes(of: &storage.sun_path) { raw in
            raw.copyBytes(from: bytes)
        }
        let length = MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + bytes.count + (abstract ? 0 : 1)
        let bound = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(length)) }
        }
        guard bound == 0 else {
            let error = errno
            close(fd)
            throw SessionTools.Missing(description: "bind \(address): errno \(error)")
        }
        descriptor = fd
    }

    /// Waits up to `timeout` for the next datagram and returns its text, or nil when none came in time.
    public func receive(timeout: Duration = .seconds(20)) -> String? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            // Slices of 100 ms, so the deadline is kept whatever happens to the clock.
            let ready = poll(&poller, 1, 100)
            if ready > 0 {
                var buffer = [UInt8](repeating: 0, count: 4096)
                let count = recv(descriptor, &buffer, buffer.count, 0)
                if count >= 0 { return String(decoding: buffer[..<count], as: UTF8.self) }
            }
        }
        return nil
    }

    deinit {
        close(descriptor)
        if !address.hasPrefix("@") { unlink(address) }
    }
}
