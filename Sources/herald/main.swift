import HeraldArguments
import HeraldChatClient
import HeraldChatServer
import HeraldDaemon
import HeraldLaunch
import HeraldPosix

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// The hidden roles come first, before this process changes any signal disposition: `herald demo` runs this very
// binary as the daemon, the chat server and the chat clients, so a fresh `swift run herald demo` needs nothing else
// built. Each role is the same library entry point that its own executable's main.swift calls.
if let (role, arguments) = Program.Role.selected(by: Array(CommandLine.arguments.dropFirst())) {
    switch role {
    case .heraldd: DaemonMain.run(arguments: arguments)
    case .chatServer: ChatServerMain.run(arguments: arguments)
    case .chatClient: await ChatClientMain.run(arguments: arguments)
    }
}

// A reader that goes away (`herald observe | head -1`) must come back as EPIPE from write(2), which ends the
// command with status 0, instead of killing the process with SIGPIPE.
_ = signal(SIGPIPE, SIG_IGN)
// A parent may start us with signals blocked (Foundation's Process inherits its spawning thread's mask): Ctrl-C and
// SIGTERM must reach us all the same.
#if os(Linux)
try? SignalFD.unblock(signals: [SIGINT, SIGTERM])
#endif
Interruption.exitOnSignals()

switch HeraldCommand.invocation(for: Array(CommandLine.arguments.dropFirst())) {
case .show(let text):
    Terminal.writeStdout(text)
    Terminal.exit(.success)
case .usageError(let text):
    Terminal.writeStderr(text)
    Terminal.exit(.usage)
case .run(let command, let spec):
    do throws(CommandFailure) {
        try await command.run()
        if let status = Interruption.interruptedStatus { _exit(status) }
        Terminal.exit(.success)
    } catch {
        // Interrupted: the subcommand ended because its connection was closed on the way out; say nothing.
        if let status = Interruption.interruptedStatus { _exit(status) }
        Terminal.writeStderr(error.text(for: spec))
        Terminal.exit(error.status)
    }
}
