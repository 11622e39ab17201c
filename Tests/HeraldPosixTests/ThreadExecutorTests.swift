import Foundation
import HeraldPosix
import Synchronization
import Testing

@Suite struct ThreadExecutorTests {
    /// The kernel names of this process's threads now.
    static func threadNames() -> [String] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.compactMap { try? String(contentsOfFile: "/proc/self/task/\($0)/comm", encoding: .utf8) }
            .map { $0.trimmingCharacters(in: .newlines) }
    }

    @Test func startsItsThreadWithTheFirstJobAndRunsTheTaskThere() async {
        let executor = ThreadExecutor(name: "herald-te-lazy")
        // No thread before a job: an executor nobody uses costs nothing.
        #expect(!Self.threadNames().contains("herald-te-lazy"))
        let name = await Task(executorPreference: executor) {
            (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? ""
        }.value
        #expect(name == "herald-te-lazy\n")
        #expect(Self.threadNames().filter { $0 == "herald-te-lazy" }.count == 1)
    }

    @Test func runsTasksOneAtATimeInTheOrderTheyCame() async {
        let executor = ThreadExecutor(name: "herald-te-order")
        final class Ran: Sendable { let order = Mutex<[Int]>([]) }
        let ran = Ran()
        var tasks: [Task<Void, Never>] = []
        for index in 0..<200 {
            tasks.append(Task(executorPreference: executor) { ran.order.withLock { $0.append(index) } })
        }
        for task in tasks { await task.value }
        #expect(ran.order.withLock { $0 } == Array(0..<200))
        // Child tasks and nonisolated calls of a task that prefers it stay on its one thread.
        let names = await Task(executorPreference: executor) {
            await withTaskGroup(of: String.self) { group in
                for _ in 0..<8 {
                    group.addTask { (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? "" }
                }
                return await group.reduce(into: Set<String>()) { $0.insert($1) }
            }
        }.value
        #expect(names == ["herald-te-order\n"])
    }
}
