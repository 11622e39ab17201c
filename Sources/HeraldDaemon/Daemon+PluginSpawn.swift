import HeraldPlugins
import HeraldPosix

/// Starting a plugin's process without waiting for its exec, and learning from its report pipe whether the exec
/// worked (issue 27).
extension Daemon {
    /// What starting a plugin's process gave.
    enum SpawnOutcome {
        case success(Int32)
        /// Why; `permanent` when it cannot work until the file or the system changes.
        case failure(String, permanent: Bool)
    }

    /// Forks the plugin's process with its output pipe and environment, and watches its report pipe.
    mutating func spawnPlugin(_ declaration: PluginDeclaration) -> SpawnOutcome {
        guard let executable = declaration.executable else {
            return .failure("its program was not checked", permanent: true)
        }
        let pipe: ChildProcesses.OutputPipe
        do {
            pipe = try ChildProcesses.makeOutputPipe()
        } catch {
            return .failure("\(error)", permanent: false)
        }
        // The daemon's own environment, less what is only for it, then what every plugin is told, then the file's.
        let ownOnly: Set<String> = [
            "HERALD_SOCKET", "HERALD_PLUGIN", "LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES",
            "NOTIFY_SOCKET",
        ]
        var environment = ProcessEnvironment.entries().filter { entry in
            !ownOnly.contains(String(entry.prefix { $0 != "=" }))
        }
        environment.append("HERALD_SOCKET=\(options.socketPath)")
        environment.append("HERALD_PLUGIN=\(declaration.name)")
        environment += declaration.environment.map(\.assignment)
        // Not waiting for the exec: on a loaded machine the child may wait milliseconds to be scheduled, and the
        // loop would wait with it for every plugin it starts. Whether the exec worked comes on the report pipe.
        let started: ChildProcesses.Started
        do {
            started = try ChildProcesses.start(
                executable: executable,
                arguments: declaration.command,
                environment: environment,
                workingDirectory: declaration.workingDirectory,
                standardOutput: pipe.writeEnd,
                standardError: pipe.writeEnd,
                descriptorSoftLimit: plugins.inheritedDescriptorLimit
            )
        } catch {
            return .failure("\(error)", permanent: false)
        }
        let pid = started.pid
        watchExec(of: pid, report: started.takeReport(), declaration: declaration)
        let readEnd = pipe.closingWriteEnd()
        let fd = readEnd.rawValue
        do {
            try loop.register(fd, interest: .readable, handler: .pluginOutput(fd))
        } catch {
            logger.warning("plugin \(declaration.name): its output cannot be watched, and is discarded: \(error)")
        }
        plugins.outputs[fd] = PluginHost.Output(descriptor: readEnd, plugin: declaration.name)
        return .success(pid)
    }

    /// Watches a started plugin's report pipe, which says whether its exec worked.
    mutating func watchExec(of pid: Int32, report: consuming FileDescriptor, declaration: PluginDeclaration) {
        let fd = report.rawValue
        do {
            try loop.register(fd, interest: .readable, handler: .pluginExec(fd))
        } catch {
            // Unwatched, a failed exec still shows, as the child's exit 127.
            logger.warning("plugin \(declaration.name): whether it started cannot be watched: \(error)")
            return
        }
        plugins.execWatches[fd] = PluginHost.ExecWatch(descriptor: report, pid: pid, declaration: declaration)
        plugins.execWatchByPID[pid] = fd
    }

    /// A plugin's report pipe is readable: its exec worked, or why it did not.
    mutating func pluginExecReported(_ fd: Int32) {
        guard let watch = plugins.execWatches[fd] else { return }
        let report = ChildProcesses.report(watch.descriptor)
        if report == .pending { return }
        endExecWatch(fd)
        if case .failed(let step, let errno) = report { execFailed(watch, step: step, errno: errno) }
    }

    /// Before `pid`'s exit is taken as the plugin's: when its exec failed, that is the news, not the exit 127.
    ///
    /// - Returns: whether the exit was its failed exec, now reported to the supervisor.
    mutating func exitWasFailedExec(_ pid: Int32) -> Bool {
        guard let fd = plugins.execWatchByPID[pid], let watch = plugins.execWatches[fd] else { return false }
        let report = ChildProcesses.report(watch.descriptor)
        endExecWatch(fd)
        guard case .failed(let step, let errno) = report else { return false }
        execFailed(watch, step: step, errno: errno)
        return true
    }

    mutating func execFailed(_ watch: PluginHost.ExecWatch, step: ChildProcesses.SpawnStep, errno: Errno) {
        let executable = watch.declaration.executable ?? watch.declaration.program
        let (reason, permanent) = PluginHost.spawnFailure(
            step: step,
            errno: errno,
            executable: executable,
            declaration: watch.declaration
        )
        logger.warning("plugin \(watch.declaration.name): cannot start: \(reason)")
        carryOut(plugins.supervisor.execFailed(pid: watch.pid, reason: reason, permanent: permanent, now: pluginNow))
    }

    mutating func endExecWatch(_ fd: Int32) {
        loop.deregister(fd)
        if let watch = plugins.execWatches.removeValue(forKey: fd) { plugins.execWatchByPID[watch.pid] = nil }
    }
}
