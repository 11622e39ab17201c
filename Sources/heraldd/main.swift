import HeraldArguments

#if canImport(Glibc)
import Glibc
#endif

// heraldd: parse the command line, set up the socket, run the event loop until SIGTERM or SIGINT.
// Exit codes: 0 after a clean shutdown, 1 when the daemon cannot start, 64 for a usage error.

let options: DaemonOptions
do {
    switch try DaemonOptions.spec.parse(Array(CommandLine.arguments.dropFirst())) {
    case .help:
        Terminal.writeStdout(DaemonOptions.spec.helpText)
        Terminal.exit(.success)
    case .version:
        Terminal.writeStdout("heraldd \(DaemonOptions.version)\n")
        Terminal.exit(.success)
    case .run(let arguments):
        options = try DaemonOptions(arguments)
    }
} catch {
    Terminal.writeStderr(DaemonOptions.spec.errorText(error))
    Terminal.exit(.usage)
}

// Logging to a closed stderr must not kill the daemon; sockets use MSG_NOSIGNAL on their own.
signal(SIGPIPE, SIG_IGN)

do {
    var daemon = try Daemon(options: options)
    daemon.run()
    Terminal.exit(.success)
} catch {
    Terminal.writeStderr("heraldd: error: \(error)\n")
    Terminal.exit(.failure)
}
