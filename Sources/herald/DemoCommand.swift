import Foundation
import HeraldArguments

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
            Starts a private heraldd and herald-chat-server (found next to this herald) in a temporary directory \
            and on a free port, two herald-chat clients as separate processes, and posts the session's \
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
        DemoInterruption.install()
        let demo: DemoRun
        do {
            demo = try DemoRun(pace: pace)
        } catch {
            throw .failure(error.message)
        }
        do throws(DemoFailure) {
            let transcript = try await demo.play()
            await demo.cleanUp()
            // A signal that arrived during the last step still means the run was interrupted.
            try DemoInterruption.check()
            Terminal.writeStdout("\nThe room as bob saw it:\n\n" + transcript.map { "    \($0)\n" }.joined())
            let away = transcript.filter { $0.hasSuffix("* alice went away") }.count
            let back = transcript.filter { $0.hasSuffix("* alice came back") }.count
            guard away == 1, back == 1 else {
                throw DemoFailure("bob saw 'alice went away' \(away) times and 'alice came back' \(back) times")
            }
            Terminal.writeStdout("\nalice went away and came back, and bob's room said so once each.\n")
        } catch {
            await demo.cleanUp()
            if error.interrupted, let signal = DemoInterruption.signal {
                throw CommandFailure(status: signal == SIGINT ? .interrupted : .failure, message: nil)
            }
            throw .failure("demo failed: \(error.message)")
        }
    }
}
