import Foundation
import HeraldPosix
import Testing

@Suite struct DetachedThreadTests {
    /// The thread's id and kernel name, as the thread itself sees them.
    struct Seen: Sendable {
        let thread: pthread_t
        let name: String
    }

    @Test func runsTheBodyOnAThreadOfItsOwnWithTheKernelNameAsked() async throws {
        let caller = pthread_self()
        let seen = await withCheckedContinuation { (resume: CheckedContinuation<Seen, Never>) in
            DetachedThread.start(name: "herald-test-thread-long") {
                let name = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? ""
                resume.resume(returning: Seen(thread: pthread_self(), name: name))
            }
        }
        #expect(pthread_equal(seen.thread, caller) == 0)
        // Linux keeps the first 15 bytes of a thread's name.
        #expect(seen.name == "herald-test-thr\n")
    }

    @Test func everyThreadRunsItsBodyOnce() async {
        let count = 32
        let ran = await withTaskGroup(of: Int.self) { group in
            for index in 0..<count {
                group.addTask {
                    await withCheckedContinuation { (resume: CheckedContinuation<Int, Never>) in
                        DetachedThread.start(name: "herald-test-\(index)") { resume.resume(returning: index) }
                    }
                }
            }
            return await group.reduce(into: Set<Int>()) { $0.insert($1) }
        }
        #expect(ran == Set(0..<count))
    }
}
