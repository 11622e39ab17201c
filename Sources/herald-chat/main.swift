import HeraldArguments
import HeraldPosix

#if canImport(Glibc)
import Glibc
#endif

// herald-chat: parse the command line, chat until /quit, the end of input, SIGINT or SIGTERM.

let options: ClientOptions
do {
    switch try ClientOptions.spec.parse(Array(CommandLine.arguments.dropFirst())) {
    case .help:
        Terminal.writeStdout(ClientOptions.spec.helpText)
        Terminal.exit(.success)
    case .version:
        Terminal.writeStdout("herald-chat \(ClientOptions.version)\n")
        Terminal.exit(.success)
    case .run(let arguments):
        options = try ClientOptions(arguments)
    }
} catch {
    Terminal.writeStderr(ClientOptions.spec.errorText(error))
    Terminal.exit(.usage)
}

// A reader that went away shows up as EPIPE, not a SIGPIPE death.
signal(SIGPIPE, SIG_IGN)
// A parent may start us with signals blocked (Foundation's Process inherits its spawning thread's mask): Ctrl-C and
// SIGTERM must reach us all the same.
#if os(Linux)
try? SignalFD.unblock(signals: [SIGINT, SIGTERM])
#endif

let signals = SignalStream.make([SIGINT, SIGTERM])

switch await ChatClient(options: options).run(signals: signals) {
case .quit:
    Terminal.exit(.success)
case .refused(let reason):
    Terminal.writeStderr("herald-chat: error: \(reason)\n")
    Terminal.exit(.failure)
case .signal(let number):
    exit(128 + number)
}
