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

/// The executor of the one task an executable started with ``runOnOwnThread(_:)`` runs: one thread, named `tasks`.
///
/// Start an unstructured task that must not reach the global concurrent executor with
/// `Task.detached(executorPreference: mainTaskExecutor)`; a plain `Task {}` inherits the preference.
public let mainTaskExecutor: any TaskExecutor = ThreadExecutor(name: "tasks")

/// Runs `main` as a task on a thread of its own, ``mainTaskExecutor``, and never returns: the process ends when
/// `main` ends it (``runMain(_:run:)`` does).
///
/// For a long-lived executable that must not wake while nothing happens. An `await` at top level of `main.swift`
/// would run its first nonisolated async function on Swift's global concurrent executor; once libdispatch's worker
/// pool has run a job, its monitor wakes the process once a second for as long as it lives. Here every nonisolated
/// async function `main` calls, and every child task it starts, runs on the one thread, which sleeps while there is
/// nothing to do, and the main thread waits in pause(2), where only signal handlers run. A job must not block that
/// thread waiting for another job: code that blocks a thread should run under
/// `withTaskExecutorPreference(globalConcurrentExecutor)`.
///
/// - Parameter main: the executable's work; it ends the process rather than returning.
public func runOnOwnThread(_ main: @escaping @Sendable () async -> Never) -> Never {
    runMainTask(on: mainTaskExecutor, main)
}

/// Runs `main` as a task that prefers `executor` and never returns, as ``runOnOwnThread(_:)`` does on its thread:
/// for a synchronous `main.swift` whose work belongs elsewhere, such as `globalConcurrentExecutor` for code that
/// blocks threads.
///
/// - Parameters:
///   - executor: where the task and its child tasks run.
///   - main: the executable's work; it ends the process rather than returning.
public func runMainTask(on executor: any TaskExecutor, _ main: @escaping @Sendable () async -> Never) -> Never {
    Task(executorPreference: executor) { await main() }
    while true { _ = pause() }
}
