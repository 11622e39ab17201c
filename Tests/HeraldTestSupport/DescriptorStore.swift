internal import CHeraldShim
import Foundation
public import HeraldLaunch

#if canImport(Glibc)
import Glibc
#endif

/// A stand-in for systemd's file-descriptor store: a `NOTIFY_SOCKET` that keeps the descriptors a daemon sends with
/// `FDSTORE=1` and `FDNAME=`, closes them on `FDSTOREREMOVE=1`, and passes them back to the next daemon it starts as
/// `LISTEN_FDS` / `LISTEN_FDNAMES` (descriptors 3 and up, `LISTEN_PID` the daemon's own), as systemd does for a unit
/// with `FileDescriptorStoreMax=`.
public final class DescriptorStore: @unchecked Sendable {
    public let address: String
    private let descriptor: Int32
    /// What the store holds, by name, oldest first.
    public private(set) var stored: [(name: String, descriptor: Int32)] = []
    /// Every notification's text, in order.
    public private(set) var messages: [String] = []

    /// Binds the notify socket at `address`.
    public init(address: String) throws {
        self.address = address
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket(AF_UNIX, SOCK_DGRAM): errno \(errno)") }
        var storage = sockaddr_un()
        storage.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(address.utf8)
        withUnsafeMutableBytes(of: &storage.sun_path) { $0.copyBytes(from: bytes) }
        let length = MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + bytes.count + 1
        let bound = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(length)) }
        }
        guard bound == 0 else {
            close(fd)
            throw TestFailure("bind \(address): errno \(errno)")
        }
        descriptor = fd
    }

    /// The environment a daemon needs to use this store: `NOTIFY_SOCKET`, and `FDSTORE` as systemd 254 sets it.
    public var environment: [String: String?] { ["NOTIFY_SOCKET": address, "FDSTORE": "8"] }

    /// Handles notifications until one contains `text`, or `timeout` passes.
    ///
    /// - Returns: Whether it came.
    @discardableResult
    public func waitFor(_ text: String, timeout: Duration = .seconds(20)) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 100) > 0 else { continue }
            var buffer = [UInt8](repeating: 0, count: 4096)
            var passed: Int32 = -1
            let count = herald_receive_with_fd(descriptor, &buffer, buffer.count, &passed)
            guard count >= 0 else { continue }
            let message = String(decoding: buffer[..<count], as: UTF8.self)
            messages.append(message)
            let fields = Dictionary(
                message.split(separator: "\n").map { line in
                    let parts = line.split(separator: "=", maxSplits: 1).map(String.init)
                    return (parts[0], parts.count > 1 ? parts[1] : "")
                },
                uniquingKeysWith: { $1 }
            )
            if fields["FDSTORE"] == "1", passed >= 0 {
                stored.append((fields["FDNAME"] ?? "stored", passed))
            } else if passed >= 0 {
                close(passed)
            }
            if fields["FDSTOREREMOVE"] == "1", let name = fields["FDNAME"] {
                for entry in stored where entry.name == name { close(entry.descriptor) }
                stored.removeAll { $0.name == name }
            }
            if message.contains(text) { return true }
        }
        return false
    }

    /// heraldd started through a shell that puts the stored descriptors at 3 and up, as systemd passes them, with
    /// `LISTEN_PID` its own pid: a `Program` for `LaunchedDaemon`.
    public func program(heraldd: String) -> Program {
        var script = ""
        for (index, entry) in stored.enumerated() {
            script += "exec \(3 + index)<>/proc/\(getpid())/fd/\(entry.descriptor); "
        }
        if !stored.isEmpty {
            let names = stored.map(\.name).joined(separator: ":")
            script += "LISTEN_PID=$$ LISTEN_FDS=\(stored.count) LISTEN_FDNAMES=\(names); "
            script += "export LISTEN_PID LISTEN_FDS LISTEN_FDNAMES; "
        }
        script += "exec \"$0\" \"$@\""
        var program = Program(executable: "/bin/sh")
        program.leadingArguments = ["-c", script, heraldd]
        return program
    }

    deinit {
        for entry in stored { close(entry.descriptor) }
        close(descriptor)
        unlink(address)
    }
}
