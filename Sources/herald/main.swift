import HeraldChatClient
import HeraldChatServer
import HeraldCommandLine
import HeraldDaemon
import HeraldLaunch

// The hidden roles come first, before this process changes any signal disposition: `herald demo` runs this very
// binary as the daemon, the chat server and the chat clients, so a fresh `swift run herald demo` needs nothing else
// built. Each role is the same library entry point that its own executable's main.swift calls. This dispatch is the
// only reason `herald` links anything but Herald and HeraldCommandLine; the subcommands use neither of the others.
if let (role, arguments) = Program.Role.selected(by: Array(CommandLine.arguments.dropFirst())) {
    switch role {
    case .heraldd: DaemonMain.run(arguments: arguments)
    case .chatServer: ChatServerMain.run(arguments: arguments)
    case .chatClient:
        // The chat client blocks a thread reading its input: on the global pool, as its own executable runs it.
        runMainTask(on: globalConcurrentExecutor) { await ChatClientMain.run(arguments: arguments) }
    }
}

Interruption.exitOnSignals()
// On a thread of its own, never on the global executor: `herald wait`, `observe` and `monitor` sleep while nothing
// happens, where libdispatch's worker pool would wake them once a second (runOnOwnThread).
runOnOwnThread {
    await runMain(HeraldCommand.invocation(for: Array(CommandLine.arguments.dropFirst()))) {
        command throws(CommandFailure) -> ExitCode in
        do throws(CommandFailure) {
            try await command.run()
        } catch {
            // Interrupted: the subcommand ended because its connection was closed on the way out; say nothing.
            if let status = Interruption.interruptedStatus { Terminal.exitImmediately(status) }
            throw error
        }
        if let status = Interruption.interruptedStatus { Terminal.exitImmediately(status) }
        return .success
    }
}
