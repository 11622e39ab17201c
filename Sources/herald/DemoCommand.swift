import Foundation
import HeraldCommandLine

/// `herald demo`: the whole story on one machine, in temporary directories and on free ports.
///
/// A private heraldd and a chat server start; alice's chat client follows the session through that heraldd, and
/// bob's (on another desktop, so `--no-presence`) only chats. A desktop hook's posts of `session.willResignActive`
/// and `session.didBecomeActive`, made with this very `herald`, make alice's client tell the room "alice went away"
/// and "alice came back", and the demo prints the room as bob saw it.
struct DemoCommand: Subcommand {
    static let spec = CommandSpec(
        name: "herald demo",
        abstract: "Run the chat story: alice walks away from her desktop and comes back, and bob's chat shows it.",
        discussion: """
            Starts a private heraldd and herald-chat-server (this herald's hidden roles) in a temporary directory \
            and on a free port, two herald-chat clients as separate processes (hidden roles too), and posts the session's \
            notifications with 'herald post' as a screen-lock hook would. Prints bob's transcript and exits 0 \
            when it shows "alice went away" and "alice came back" exactly once each. Everything it starts is \
            stopped and removed on exit, on failure and on Ctrl-C.
            """,
        options: [
            OptionSpec(
                long: "pace",
                valueName: "seconds",
                help: "Pause this long after each step, to follow the story as it happens.",
                defaultDescription: "0"
            )
        ]
    )

    /// The pause after each step.
    var pace: Duration

    init(_ arguments: ParsedArguments) throws(UsageError) {
        pace = .seconds(try arguments.double("pace", range: 0...60) ?? 0)
    }

    func run() async throws(CommandFailure) {
        // The demo starts and watches child processes, with threads that block: on the global pool, not on the
        // one thread of `herald`'s other subcommands (runOnOwnThread), and it is over in seconds.
        try await withTaskExecutorPreference(globalConcurrentExecutor) { () async throws(CommandFailure) in
            try await play()
        }
    }

    private func play() async throws(CommandFailure) {
        Signals.recordStops()
        let demo: DemoRun
        do {
            demo = try DemoRun(pace: pace)
        } catch {
            throw .failure(error.message)
        }
        let outcome = await DemoInterruption.playCancellingOnSignal(demo)
        await demo.cleanUp()
        // A signal that arrived during the last step still means the run was interrupted.
        if let signal = Signals.recordedStop {
            throw CommandFailure(
                status: ExitCode(signal: signal) == .interrupted ? .interrupted : .failure,
                message: nil
            )
        }
        do throws(DemoFailure) {
            let transcript = try outcome.get()
            Terminal.writeStdout("\nThe room as bob saw it:\n\n" + transcript.map { "    \($0)\n" }.joined())
            let away = transcript.filter { $0.hasSuffix("* alice went away") }.count
            let back = transcript.filter { $0.hasSuffix("* alice came back") }.count
            guard away == 1, back == 1 else {
                throw DemoFailure("bob saw 'alice went away' \(away) times and 'alice came back' \(back) times")
            }
            Terminal.writeStdout("\nalice went away and came back, and bob's room said so once each.\n")
        } catch {
            throw .failure("demo failed: \(error.message)")
        }
    }
}

/// SIGINT and SIGTERM during the demo: recorded by a handler (`Signals.recordStops()`, which children started by exec
/// do not inherit, so they still stop on these signals), and turned into the cancellation of the story's task, whose
/// waits then end at once; the demo stops every child and removes its directory before exiting.
enum DemoInterruption {
    /// Plays `demo`, cancelling it as soon as a signal has been recorded.
    ///
    /// A signal handler may do almost nothing, so a watcher looks at the recorded signal every 20 ms while the story
    /// plays; it ends with the story.
    static func playCancellingOnSignal(_ demo: DemoRun) async -> Result<[String], DemoFailure> {
        let story = Task { () async -> Result<[String], DemoFailure> in
            do throws(DemoFailure) {
                return .success(try await demo.play())
            } catch {
                return .failure(error)
            }
        }
        let watcher = Task {
            while !Task.isCancelled {
                if Signals.recordedStop != nil {
                    story.cancel()
                    return
                }
                try? await Task.sleep(for: .milliseconds(20))
            }
        }
        let outcome = await story.value
        watcher.cancel()
        return outcome
    }
}
