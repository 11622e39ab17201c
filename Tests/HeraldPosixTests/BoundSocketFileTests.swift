import HeraldPosix
import HeraldTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

@Suite struct BoundSocketFileTests {
    private func exists(_ path: String) -> Bool {
        var status = stat()
        return lstat(path, &status) == 0
    }

    @Test func removesTheSocketItBound() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("socket")
        let listener = try UnixSocket.listen(path: path)
        let file = try BoundSocketFile(boundAt: path)
        #expect(try file.remove())
        #expect(!exists(path))
        listener.close()
    }

    @Test func leavesASocketBoundInItsPlaceAlone() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("socket")
        let first = try UnixSocket.listen(path: path)
        let file = try BoundSocketFile(boundAt: path)
        // Another process removed the file and bound its own socket at the same path.
        #expect(unlink(path) == 0)
        let second = try UnixSocket.listen(path: path)
        #expect(try !file.remove())
        #expect(exists(path))
        first.close()
        second.close()
    }

    @Test func removesThroughItsDirectoryNotThroughAPathThatNowLeadsElsewhere() throws {
        let directory = TemporaryDirectory()
        #expect(mkdir(directory.file("d"), 0o700) == 0)
        #expect(mkdir(directory.file("e"), 0o700) == 0)
        let ours = try UnixSocket.listen(path: directory.file("d/socket"))
        let file = try BoundSocketFile(boundAt: directory.file("d/socket"))
        let decoy = try UnixSocket.listen(path: directory.file("e/socket"))
        #expect(rename(directory.file("d"), directory.file("moved")) == 0)
        #expect(symlink(directory.file("e"), directory.file("d")) == 0)
        #expect(try file.remove())
        #expect(exists(directory.file("e/socket")))
        #expect(!exists(directory.file("moved/socket")))
        ours.close()
        decoy.close()
    }

    @Test func refusesAPathThatIsNotASocket() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("plain")
        let descriptor = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0o600)
        #expect(descriptor >= 0)
        close(descriptor)
        let error = #expect(throws: SystemError.self) { _ = try BoundSocketFile(boundAt: path) }
        #expect(error?.errno == .alreadyExists)
        #expect(exists(path))
    }
}
