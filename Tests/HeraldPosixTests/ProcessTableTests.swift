import HeraldPosix
import HeraldTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// What heraldd needs to find and end what its plugins left (issue 27): `/proc` read for parents, groups, start
/// times, children and environments; a start that does not wait for the exec; a file name that is not UTF-8.
@Suite(.serialized)
struct ProcessTableTests {
    /// Starts `sh -c script` without waiting for its exec, in `workingDirectory`.
    private func start(
        _ script: String,
        executable: String = "/bin/sh",
        environment: [String] = ["PATH=/usr/bin:/bin"],
        workingDirectory: String? = nil
    ) throws -> ChildProcesses.Started {
        let pipe = try ChildProcesses.makeOutputPipe()
        let started = try ChildProcesses.start(
            executable: executable,
            arguments: ["sh", "-c", script],
            environment: environment,
            workingDirectory: workingDirectory,
            standardOutput: pipe.writeEnd,
            standardError: pipe.writeEnd
        )
        return started
    }

    /// The report, once it is known (the child may take a while to be scheduled on a loaded machine).
    private func awaitReport(_ report: borrowing FileDescriptor) throws -> ChildProcesses.ExecReport {
        for _ in 0..<5000 {
            let value = ChildProcesses.report(report)
            if value != .pending { return value }
            _ = try report.waitForInput(orFrom: -1, timeoutMilliseconds: 10)
        }
        return .pending
    }

    private func reap(_ pid: Int32) -> ChildExit? {
        for _ in 0..<5000 {
            if let status = ChildProcesses.reapIfExited(pid) { return status }
            usleep(2000)
        }
        return nil
    }

    @Test func aStartedChildReportsItsExecAndIsFoundInTheProcessTable() throws {
        let before = ProcessTable.startTimeNow()
        let started = try start("exec sleep 30", environment: ["PATH=/usr/bin:/bin", "HERALD_PLUGIN=probe"])
        let pid = started.pid
        defer {
            ChildProcesses.send(SIGKILL, to: pid)
            _ = reap(pid)
        }
        #expect(try awaitReport(started.report) == .executed)
        let entry = try #require(ProcessTable.entry(of: pid))
        #expect(entry.pid == pid)
        #expect(entry.parent == getpid())
        // The spawn makes it a session and group leader.
        #expect(entry.session == pid)
        #expect(entry.group == pid)
        #expect(entry.startTime >= before)
        #expect(!entry.isZombie)
        #expect(ProcessTable.children(of: getpid()).contains(pid))
        #expect(ProcessTable.tree(of: getpid()).contains(pid))
        // The report comes when exec closes its pipe, which the kernel does before it has laid out the new image's
        // environment: /proc/PID/environ can still read empty for a moment (seen once in four runs), and until the
        // child is scheduled again to finish its exec, which in CI's whole run took over 5 s once.
        let deadline = ContinuousClock.now + .seconds(60)
        while ProcessTable.environmentValue(of: pid, "HERALD_PLUGIN") == nil && ContinuousClock.now < deadline {
            usleep(1000)
        }
        #expect(ProcessTable.environmentValue(of: pid, "HERALD_PLUGIN") == "probe")
        #expect(ProcessTable.environmentValue(of: pid, "HERALD_SOCKET") == nil)
        #expect(ProcessTable.allPIDs().contains(pid))
    }

    @Test func aMissingWorkingDirectoryIsReportedAsSuch() throws {
        let started = try start("exit 0", workingDirectory: "/nonexistent/directory")
        #expect(try awaitReport(started.report) == .failed(.workingDirectory, Errno(rawValue: ENOENT)))
        #expect(reap(started.pid) == .exited(127))
    }

    @Test func aMissingInterpreterIsAFailedExec() throws {
        let directory = TemporaryDirectory(prefix: "pt")
        let script = directory.file("script")
        try FileSystem.replace(script, with: "#!/nonexistent/interpreter\necho hi\n")
        #expect(chmod(script, 0o755) == 0)
        #expect(FileSystem.firstLine(of: script) == "#!/nonexistent/interpreter")
        let started = try start("", executable: script)
        #expect(try awaitReport(started.report) == .failed(.exec, Errno(rawValue: ENOENT)))
        #expect(reap(started.pid) == .exited(127))
    }

    @Test func aDirectoryListsNamesThatAreNotUTF8AsTheyAre() throws {
        let directory = TemporaryDirectory(prefix: "pt")
        let name: [UInt8] = [0x61, 0xFF, 0x2E, 0x70, 0x6C, 0x75, 0x67, 0x69, 0x6E]
        let path = Array(directory.path.utf8) + [UInt8(ascii: "/")] + name + [0]
        let fd = path.withUnsafeBufferPointer { buffer in
            buffer.baseAddress!.withMemoryRebound(to: CChar.self, capacity: buffer.count) {
                open($0, O_CREAT | O_WRONLY | O_CLOEXEC, 0o644)
            }
        }
        #expect(fd >= 0)
        close(fd)
        #expect(try FileSystem.entryBytes(of: directory.path) == [name])
    }

    @Test func theRecordIsAppendedToAndReplacedWhole() throws {
        let directory = TemporaryDirectory(prefix: "pt")
        let path = directory.file("record")
        try FileSystem.append("+ 1 2\n", to: path)
        try FileSystem.append("- 1\n", to: path)
        #expect(try FileSystem.contents(of: path, limit: 100) == Array("+ 1 2\n- 1\n".utf8))
        try FileSystem.replace(path, with: "+ 3 4\n")
        #expect(try FileSystem.contents(of: path, limit: 100) == Array("+ 3 4\n".utf8))
        #expect(try FileSystem.status(of: path).permissions == 0o600)
        FileSystem.remove(path)
        #expect(throws: SystemError.self) { _ = try FileSystem.status(of: path) }
    }
}
