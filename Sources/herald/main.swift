import HeraldArguments

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// A reader that goes away (`herald observe | head -1`) must come back as EPIPE from write(2), which ends the
// command with status 0, instead of killing the process with SIGPIPE.
_ = signal(SIGPIPE, SIG_IGN)
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
        Terminal.exit(.success)
    } catch {
        Terminal.writeStderr(error.text(for: spec))
        Terminal.exit(error.status)
    }
}
