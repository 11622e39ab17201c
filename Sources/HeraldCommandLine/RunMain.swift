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
    let (command, spec) = prepareMain(invocation)
    do throws(CommandFailure) {
        Terminal.exit(try await run(command))
    } catch {
        Terminal.writeStderr(error.text(for: spec))
        Terminal.exit(error.status)
    }
}

/// Runs an executable whose work blocks the main thread, as ``runMain(_:version:arguments:options:run:)`` runs an
/// async one: the same help, version, usage errors, `Error: ...` and exit statuses.
///
/// For daemons that read SIGTERM and SIGINT from a signalfd (heraldd, herald-chat-server): a signalfd sees a signal
/// only while every thread blocks it, so they must not start the concurrency runtime's threads, which would be born
/// with the signals unblocked and take them with their default action, ending the process mid-shutdown.
///
/// - Parameters:
///   - spec: the command line the executable accepts; it should declare a `version` flag.
///   - version: what `--version` prints, e.g. `heraldd 0.1.0`.
///   - arguments: the command line after the program name.
///   - options: builds the executable's options from the parsed arguments; a `UsageError` ends it with 64.
///   - run: does the work with the options, on the calling thread.
public func runBlockingMain<Options>(
    _ spec: CommandSpec,
    version: String,
    arguments: [String],
    options: (ParsedArguments) throws(UsageError) -> Options,
    run: (Options) throws(CommandFailure) -> ExitCode
) -> Never {
    let (command, checkedSpec) = prepareMain(spec.invocation(arguments, version: version, options: options))
    do throws(CommandFailure) {
        Terminal.exit(try run(command))
    } catch {
        Terminal.writeStderr(error.text(for: checkedSpec))
        Terminal.exit(error.status)
    }
}

/// What both entry points do first: signals, then help, the version and usage errors.
private func prepareMain<Command>(_ invocation: Invocation<Command>) -> (Command, CommandSpec) {
    // Before anything is written: `herald --help | head -0` must end with 0, not die of SIGPIPE.
    try? SignalDisposition.ignore([SIGPIPE])
    Signals.unblockStopping()
    return invocation.commandOrExit()
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
