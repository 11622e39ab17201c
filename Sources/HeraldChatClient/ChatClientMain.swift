import ChatCore
import HeraldArguments
import HeraldPosix

#if canImport(Glibc)
import Glibc
#endif

/// herald-chat's whole life as a function: parse the command line, chat until /quit, the end of input, SIGINT or
/// SIGTERM, and end the process.
///
/// `herald-chat`'s `main.swift` calls it, and so does `herald demo`'s hidden chat-client role.
///
/// Exit codes: 0 after /quit or the end of input, 1 when the server refuses us, 64 for a usage error, and 128 plus
/// the signal's number after a signal.
public enum ChatClientMain {
    /// Runs the chat client with `arguments` (without the program name) and exits the process.
    ///
    /// - Parameter arguments: The command line after the program name.
    public static func run(arguments: [String]) async -> Never {
        let options = ClientOptions.spec.parseOrExit(arguments, version: "herald-chat \(ClientOptions.version)") {
            parsed throws(UsageError) in try ClientOptions(parsed)
        }

        // A reader that went away shows up as EPIPE, not a SIGPIPE death.
        signal(SIGPIPE, SIG_IGN)
        // A parent may start us with signals blocked (Foundation's Process inherits its spawning thread's mask):
        // Ctrl-C and SIGTERM must reach us all the same.
        #if os(Linux)
        try? SignalFD.unblock(signals: [SIGINT, SIGTERM])
        #endif

        let signals = SignalStream.make([SIGINT, SIGTERM])

        switch await ChatClient(options: options).run(signals: signals) {
        case .quit:
            Terminal.exit(.success)
        case .refused(let reason):
            // The reason quotes the server, which must not write to the terminal.
            Terminal.writeStderr("herald-chat: error: \(Transcript.escaped(reason))\n")
            Terminal.exit(.failure)
        case .signal(let number):
            exit(128 + number)
        }
    }
}
