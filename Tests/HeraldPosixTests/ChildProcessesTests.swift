import HeraldPosix
import HeraldTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Starting children the way heraldd starts its plugins, with /bin/sh scripts as the children.
struct ChildProcessesTests {
    /// Runs `script` with sh and returns what it wrote and how it ended.
    private func run(
        _ script: String,
        environment: [String] = ["PATH=/usr/bin:/bin"],
        workingDirectory: String? = nil,
        descriptorSoftLimit: UInt64 = 0
    ) throws -> (output: String, status: ChildExit) {
        let pipe = try ChildProcesses.makeOutputPipe()
        let pid = try ChildProcesses.spawn(
            executable: "/bin/sh",
            arguments: ["sh", "-c", script],
            environment: environment,
            workingDirectory: workingDirectory,
            standardOutput: pipe.writeEnd,
            standardError: pipe.writeEnd,
            descriptorSoftLimit: descriptorSoftLimit
        )
        let output = try readToEnd(pipe.closingWriteEnd())
        var status: ChildExit?
        for _ in 0..<1000 where status == nil {
            status = ChildProcesses.reapIfExited(pid)
            if status == nil { usleep(2000) }
        }
        return (output, try #require(status))
    }

    private func readToEnd(_ file: borrowing FileDescriptor) throws -> String {
        var bytes: [UInt8] = []
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 1)
        defer { buffer.deallocate() }
        while true {
            switch try file.read(into: buffer) {
            case .processed(0): return String(decoding: bytes, as: UTF8.self)
            case .processed(let count): bytes.append(contentsOf: buffer[0..<count])
            case .wouldBlock: _ = try file.waitForInput(orFrom: -1, timeoutMilliseconds: 10_000)
            }
        }
    }

    @Test func runsTheProgramWithItsArgumentsAndEnvironmentAndReportsItsExitStatus() throws {
        let (output, status) = try run(#"echo "out $GREETING"; echo err >&2; exit 3"#, environment: ["GREETING=hi"])
        #expect(output == "out hi\nerr\n")
        #expect(status == .exited(3))
        #expect(status.description == "exited 3")
    }

    @Test func reportsTheSignalThatKilledIt() throws {
        let (_, status) = try run("kill -KILL $$")
        #expect(status == .killed(signal: SIGKILL))
        #expect(status.description == "killed by signal 9 (SIGKILL)")
    }

    @Test func startsInTheWorkingDirectoryWithStdinFromDevNull() throws {
        let (output, status) = try run("pwd; cat; echo end", workingDirectory: "/usr")
        #expect(output == "/usr\nend\n")
        #expect(status == .exited(0))
    }

    @Test func aProgramThatCannotBeExecutedFailsTheSpawnWithItsErrno() throws {
        let pipe = try ChildProcesses.makeOutputPipe()
        let error = #expect(throws: SystemError.self) {
            _ = try ChildProcesses.spawn(
                executable: "/nonexistent/plugin",
                arguments: ["plugin"],
                environment: [],
                workingDirectory: nil,
                standardOutput: pipe.writeEnd,
                standardError: pipe.writeEnd
            )
        }
        #expect(error?.errno == .noEntry)
    }

    @Test func aMissingWorkingDirectoryFailsTheSpawn() throws {
        let pipe = try ChildProcesses.makeOutputPipe()
        let error = #expect(throws: SystemError.self) {
            _ = try ChildProcesses.spawn(
                executable: "/bin/sh",
                arguments: ["sh", "-c", "exit 0"],
                environment: [],
                workingDirectory: "/nonexistent/folder",
                standardOutput: pipe.writeEnd,
                standardError: pipe.writeEnd
            )
        }
        #expect(error?.errno == .noEntry)
    }

    @Test func theChildStartsWithNoSignalBlockedOrIgnored() throws {
        // This test process blocks and ignores signals of its own; the child must not. `exec`, so that what is read is
        // the mask the program started with: dash blocks every signal while it forks a command.
        let (output, status) = try run("exec grep -E '^(SigBlk|SigIgn):' /proc/self/status")
        #expect(status == .exited(0))
        let masks = Dictionary(
            uniqueKeysWithValues: output.split(separator: "\n").compactMap { line -> (String, UInt64)? in
                let parts = line.split(separator: "\t")
                guard parts.count == 2, let value = UInt64(parts[1], radix: 16) else { return nil }
                return (String(parts[0]), value)
            }
        )
        #expect(masks["SigBlk:"] == 0, "\(output)")
        // Signals 32 and 33 are glibc's own, which sigaction refuses to touch; every other one is back to default.
        let glibcInternal: UInt64 = 1 << 31 | 1 << 32
        #expect(masks["SigIgn:"].map { $0 & ~glibcInternal } == 0, "\(output)")
    }

    @Test func theChildLeadsASessionOfItsOwn() throws {
        let (output, status) = try run("exec cat /proc/self/stat")
        #expect(status == .exited(0))
        // "pid (comm) state ppid pgrp session ...": setsid makes the session id the child's own pid.
        let fields = output.split(separator: ")").last?.split(separator: " ") ?? []
        let pid = output.split(separator: " ").first.map(String.init)
        #expect(fields.count > 3 && String(fields[3]) == pid, "\(output)")
    }

    @Test func theDescriptorLimitCanBeLoweredForTheChild() throws {
        let (output, status) = try run("ulimit -n", descriptorSoftLimit: 100)
        #expect(output == "100\n")
        #expect(status == .exited(0))
    }
}

/// Reading plugin folders.
struct FileSystemTests {
    @Test func listsAFolderSortedWithoutDotEntriesAndReadsStatusAndContents() throws {
        let directory = TemporaryDirectory()
        for name in ["b.plugin", "a.plugin", ".hidden"] {
            let file = directory.file(name)
            let fd = open(file, O_CREAT | O_WRONLY | O_CLOEXEC, 0o640)
            _ = write(fd, name, name.utf8.count)
            close(fd)
        }
        #expect(try FileSystem.entries(of: directory.path) == [".hidden", "a.plugin", "b.plugin"])
        let status = try FileSystem.status(of: directory.path + "/a.plugin")
        #expect(status.isRegularFile && !status.isDirectory)
        #expect(status.ownerUID == getuid())
        #expect(status.permissions == 0o640 & ~UInt32(umaskValue()))
        #expect(!status.isWritableByOthers)
        #expect(try FileSystem.contents(of: directory.path + "/a.plugin", limit: 100) == Array("a.plugin".utf8))
        let tooLong = #expect(throws: SystemError.self) {
            _ = try FileSystem.contents(of: directory.path + "/a.plugin", limit: 3)
        }
        #expect(tooLong?.errno == Errno(rawValue: EFBIG))
        #expect(throws: SystemError.self) { _ = try FileSystem.entries(of: directory.path + "/none") }
    }

    @Test func findsAnExecutableInASearchPathAsExecvpWould() {
        #expect(FileSystem.findExecutable("sh", in: "/nonexistent:relative:/bin") == "/bin/sh")
        #expect(FileSystem.findExecutable("no-such-program-here", in: "/bin:/usr/bin") == nil)
    }

    private func umaskValue() -> mode_t {
        let old = umask(0)
        umask(old)
        return old
    }
}

extension ChildProcessesTests {
    @Test func aLowerLimitForTheChildWorksWhileThisProcessHoldsDescriptorsPastIt() throws {
        // As heraldd with thousands of connections open: the child's limit is below the lowest free descriptor.
        var held: [Int32] = []
        defer { for fd in held { close(fd) } }
        while held.count < 200 {
            let fd = open("/dev/null", O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { break }
            held.append(fd)
        }
        try #require((held.last ?? 0) > 64)
        let (output, status) = try run("ulimit -n", descriptorSoftLimit: 64)
        #expect(output == "64\n")
        #expect(status == .exited(0))
    }
}

extension ChildProcessesTests {
    @Test func aDescriptorThisProcessOpenedWithoutCloseOnExecIsNotInherited() throws {
        // Another thread of a test runner may be writing a file when a child is forked; the child must not keep it.
        let fd = open("/dev/null", O_RDONLY)
        try #require(fd >= 3)
        defer { close(fd) }
        let (output, status) = try run("if [ -e /proc/self/fd/\(fd) ]; then echo open; else echo closed; fi")
        #expect(output == "closed\n")
        #expect(status == .exited(0))
    }
}
