import HeraldPosix

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Runs an executable's whole life and ends the process: what every Herald `main.swift` does, in one place.
///
/// First SIGPIPE is ignored, so a reader that goes away (`| head -1`) comes back as EPIPE from the next write rather
/// than killing the process, and SIGINT and SIGTERM are unblocked, in case the parent started us with them blocked.
/// Then help, the version and usage errors are answered (``Invocation/commandOrExit()``). The status `run` returns
/// ends the process; a ``CommandFailure`` it throws is printed on stderr (`Error: ...`, with the usage when it asks
/// for it) and ends the process with its status.
///
/// - Parameters:
///   - invocation: what the command line asks for.
///   - run: does the work.
public func runMain<Command>(
    _ invocation: Invocation<Command>,
    run: (Command) async throws(CommandFailure) -> ExitCode
) async -> Never {
    // Before anything is written: `herald --help | head -0` must end with 0, not die of SIGPIPE.
    try? SignalDisposition.ignore([SIGPIPE])
    Signals.unblockStopping()
    let (command, spec) = invocation.commandOrExit()
    do throws(CommandFailure) {
        Terminal.exit(try await run(command))
    } catch {
        Terminal.writeStderr(error.text(for: spec))
        Terminal.exit(error.status)
    }
}

/// Runs an executable whose command line `spec` describes; see ``runMain(_:run:)``.
///
/// - Parameters:
///   - spec: the command line the executable accepts; it should declare a `version` flag.
///   - version: what `--version` prints, e.g. `herald-bench 0.1.0`.
///   - arguments: the command line after the program name; this process's by default.
///   - options: builds the executable's options from the parsed arguments; a `UsageError` ends it with 64.
///   - run: does the work with the options.
public func runMain<Options>(
    _ spec: CommandSpec,
    version: String,
    arguments: [String] = Array(CommandLine.arguments.dropFirst()),
    options: (ParsedArguments) throws(UsageError) -> Options,
    run: (Options) async throws(CommandFailure) -> ExitCode
) async -> Never {
    await runMain(spec.invocation(arguments, version: version, options: options), run: run)
}
