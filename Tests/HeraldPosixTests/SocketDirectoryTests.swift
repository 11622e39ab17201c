import HeraldPosix
import HeraldTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

@Suite struct SocketDirectoryTests {
    private func mode(of path: String) -> UInt32? {
        var status = stat()
        guard lstat(path, &status) == 0 else {
            return nil
        }
        return UInt32(status.st_mode) & 0o7777
    }

    @Test func createsMissingDirectoriesWithMode0700DespiteTheUmask() throws {
        let directory = TemporaryDirectory()
        let previous = umask(0o022)
        defer { umask(previous) }
        try SocketDirectory.prepare(forSocketAt: directory.file("a/b/socket"))
        #expect(mode(of: directory.file("a")) == 0o700)
        #expect(mode(of: directory.file("a/b")) == 0o700)
        #expect(mode(of: directory.file("a/b/socket")) == nil)
    }

    @Test func acceptsAnExistingPrivateDirectory() throws {
        let directory = TemporaryDirectory()
        #expect(chmod(directory.path, 0o700) == 0)
        try SocketDirectory.prepare(forSocketAt: directory.file("socket"))
    }

    @Test func refusesADirectoryOthersCanRead() throws {
        let directory = TemporaryDirectory()
        #expect(chmod(directory.path, 0o755) == 0)
        let error = #expect(throws: SocketDirectoryError.self) {
            try SocketDirectory.prepare(forSocketAt: directory.file("socket"))
        }
        #expect(error?.code == .wrongMode(mode: 0o755))
        #expect(
            error?.description
                == "refusing to use \(directory.path): its mode is 0755, expected 0700 (chmod 700 \(directory.path))"
        )
        #expect(mode(of: directory.path) == 0o755)
    }

    @Test func refusesANonDirectoryInThePlaceOfTheDirectory() throws {
        let directory = TemporaryDirectory()
        let file = directory.file("file")
        let fd = open(file, O_CREAT | O_WRONLY | O_CLOEXEC, 0o600)
        #expect(fd >= 0)
        close(fd)
        let error = #expect(throws: SocketDirectoryError.self) {
            try SocketDirectory.prepare(forSocketAt: file + "/socket")
        }
        #expect(error?.code == .notADirectory)
        #expect(error?.description.hasPrefix("refusing to use \(file): it is not a directory") == true)
    }

    @Test func refusesADirectoryOwnedBySomeoneElse() throws {
        // "/" is owned by root; as root this is our own directory, and the mode check applies instead.
        let error = #expect(throws: SocketDirectoryError.self) {
            try SocketDirectory.prepare(forSocketAt: "/herald-test-socket")
        }
        if geteuid() == 0 {
            #expect(error?.code == .wrongMode(mode: mode(of: "/")! & 0o777))
        } else {
            #expect(error?.code == .wrongOwner(owner: 0, expected: geteuid()))
            #expect(error?.description.contains("it is owned by uid 0, not by uid \(geteuid())") == true)
        }
    }

    @Test func removesAStaleSocket() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("socket")
        let listener = try UnixSocket.listen(path: path)
        listener.close()
        try SocketDirectory.removeStaleSocket(at: path)
        #expect(mode(of: path) == nil)
        // Nothing there is fine too.
        try SocketDirectory.removeStaleSocket(at: path)
    }

    @Test func refusesToRemoveARegularFile() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("notes")
        let fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0o600)
        #expect(fd >= 0)
        close(fd)
        let error = #expect(throws: SystemError.self) { try SocketDirectory.removeStaleSocket(at: path) }
        #expect(error?.operation.contains(path) == true)
        #expect(mode(of: path) != nil)
    }
}
