import ChatCore
import HeraldCommandLine

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
        await runMain(
            ClientOptions.spec,
            version: "herald-chat \(ClientOptions.version)",
            arguments: arguments,
            options: ClientOptions.init
        ) { options throws(CommandFailure) -> ExitCode in
            // Ctrl-C ends the chat through cancellation, so the room sees the client leave.
            switch await ChatClient(options: options).run(signals: Signals.stream()) {
            case .quit:
                return .success
            case .refused(let reason):
                // The reason quotes the server, which must not write to the terminal.
                Terminal.writeStderr("herald-chat: error: \(Transcript.escaped(reason))\n")
                return .failure
            case .signal(let number):
                return ExitCode(signal: number) ?? .failure
            }
        }
    }
}
