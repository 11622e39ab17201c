import Foundation
import HeraldPosix
import HeraldTestSupport
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// When a spawned child is killed for its parent's sake, as `PR_SET_PDEATHSIG` decides it: per thread, not per
/// process. The children are `cat`, so being alive is something they show: they echo a line.
@Suite struct ChildProcessesParentDeathTests {
    /// A `cat` started from a thread that has since ended: its pid, this process's ends of its stdin and stdout.
    struct Started: Sendable {
        var pid: Int32
        var stdin: Int32
        var stdout: Int32
    }

    /// Starts `cat` from a new thread, as a test on Swift's pool does from a thread the pool may retire, and returns
    /// once that thread is gone: its /proc entry removed, which the kernel does after the parent-death signals.
    private func startCatFromAThreadThatEnds(_ parentDeath: ChildProcesses.ParentDeath) async throws -> Started {
        let outcome = Mutex<(thread: Int32, started: Result<Started, SystemError>)?>(nil)
        let thread = Thread {
            let id = Self.threadID()
            do throws(SystemError) {
                let input = try UnixSocket.pair()
                let output = try ChildProcesses.makeBlockingPipe()
                let pid = try ChildProcesses.spawn(
                    executable: "/bin/cat",
                    arguments: ["cat"],
                    environment: [],
                    workingDirectory: nil,
                    standardOutput: output.writeEnd,
                    standardError: output.writeEnd,
                    standardInput: input.second.rawValue,
                    parentDeath: parentDeath
                )
                let stdout = output.closingWriteEnd().release()
                let stdin = input.first.release()
                outcome.withLock { $0 = (id, .success(Started(pid: pid, stdin: stdin, stdout: stdout))) }
            } catch {
                outcome.withLock { $0 = (id, .failure(error)) }
            }
        }
        thread.start()
        #expect(try await eventually { outcome.withLock { $0 != nil } })
        let (id, started) = try #require(outcome.withLock { $0 })
        try #require(id > 0)
        #expect(try await eventually { access("/proc/self/task/\(id)", F_OK) != 0 }, "thread \(id) did not end")
        return try started.get()
    }

    /// The calling thread's id, from the /proc/thread-self link ("PID/task/TID").
    private static func threadID() -> Int32 {
        var buffer = [CChar](repeating: 0, count: 64)
        let count = readlink("/proc/thread-self", &buffer, buffer.count - 1)
        guard count > 0 else { return -1 }
        let link = String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return link.split(separator: "/").last.flatMap { Int32($0) } ?? -1
    }

    /// Writes a line to the child and returns what it echoes within 5 s ("" if nothing: it is gone).
    private func echo(_ child: Started) throws -> String {
        ChildProcesses.writeInput(Array("ping\n".utf8), to: child.stdin)
        let stdout = FileDescriptor(owning: dup(child.stdout))
        var buffer = [UInt8](repeating: 0, count: 64)
        guard try stdout.waitForInput(orFrom: -1, timeoutMilliseconds: 5_000).this else { return "" }
        let result = try buffer.withUnsafeMutableBytes { try stdout.read(into: $0) }
        guard case .processed(let count) = result else { return "" }
        return String(decoding: buffer[..<count], as: UTF8.self)
    }

    /// Kills and reaps the child, and closes this process's ends.
    private func stop(_ child: Started) {
        ChildProcesses.send(SIGKILL, to: child.pid)
        _ = ChildProcesses.waitForExit(child.pid)
        close(child.stdin)
        close(child.stdout)
    }

    @Test func aChildThatDiesWithTheProcessOutlivesTheThreadThatStartedIt() async throws {
        let child = try await startCatFromAThreadThatEnds(.killsWhenProcessEnds)
        defer { stop(child) }
        #expect(try echo(child) == "ping\n")
        #expect(ChildProcesses.reapIfExited(child.pid) == nil)
    }

    @Test func aChildThatDiesWithItsThreadIsKilledWhenThatThreadEnds() async throws {
        // Why the spawner thread exists: PR_SET_PDEATHSIG from a short-lived thread kills the child with the thread.
        let child = try await startCatFromAThreadThatEnds(.killsWhenThreadEnds)
        defer { stop(child) }
        let exit = Mutex<ChildExit?>(nil)
        #expect(
            try await eventually {
                exit.withLock { $0 = $0 ?? ChildProcesses.reapIfExited(child.pid) }
                return exit.withLock { $0 != nil }
            }
        )
        #expect(exit.withLock { $0 } == .killed(signal: SIGKILL))
    }

    @Test func aChildThatIgnoresItsParentsDeathOutlivesTheThreadThatStartedIt() async throws {
        let child = try await startCatFromAThreadThatEnds(.ignored)
        defer { stop(child) }
        #expect(try echo(child) == "ping\n")
    }

    @Test func childrenStartedAtOnceFromManyThreadsAreAllStartedByTheSpawner() async throws {
        // One spawner thread serves every caller in turn: none is lost or answered with another's pid.
        let children = try await withThrowingTaskGroup(of: Started.self) { group in
            for _ in 0..<8 {
                group.addTask { try await startCatFromAThreadThatEnds(.killsWhenProcessEnds) }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        defer { children.forEach(stop) }
        #expect(Set(children.map(\.pid)).count == 8)
        for child in children {
            #expect(try echo(child) == "ping\n")
        }
    }
}
