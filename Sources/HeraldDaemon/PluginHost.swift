import HeraldPlugins
import HeraldPosix

#if canImport(Glibc)
import Glibc
#endif

/// What heraldd keeps for its plugins: the supervisor that decides, the folders it reads, and the output pipes of
/// the children it started. The daemon carries out the supervisor's actions (Daemon+Plugins.swift).
struct PluginHost {
    /// The folders plugin files are read from, the user's first.
    struct Folders: Sendable {
        /// `$XDG_CONFIG_HOME/herald/plugins`, default `~/.config/herald/plugins`.
        var user: String?
        /// Each `$XDG_DATA_DIRS/herald/plugins`, default `/usr/local/share:/usr/share`.
        var system: [String]

        /// The folders the XDG base directory rules give for this process's environment.
        static func fromEnvironment() -> Folders {
            var user: String?
            if let config = ProcessEnvironment.value("XDG_CONFIG_HOME"), config.hasPrefix("/") {
                user = config + "/herald/plugins"
            } else if let home = ProcessEnvironment.value("HOME"), home.hasPrefix("/") {
                user = home + "/.config/herald/plugins"
            }
            let data =
                ProcessEnvironment.value("XDG_DATA_DIRS").flatMap { $0.isEmpty ? nil : $0 }
                ?? "/usr/local/share:/usr/share"
            let system = data.split(separator: ":").filter { $0.hasPrefix("/") }.map { String($0) + "/herald/plugins" }
            return Folders(user: user, system: system)
        }
    }

    /// One child's stdout and stderr, which share a pipe so their lines stay in the order written.
    final class Output {
        let descriptor: FileDescriptor
        let plugin: String
        var lines = OutputLines()
        var budget = OutputBudget()
        /// When reading may resume, while the pipe is paused for spending its budget.
        var pausedUntil: Instant?

        init(descriptor: consuming FileDescriptor, plugin: String) {
            self.descriptor = descriptor
            self.plugin = plugin
        }
    }

    /// A started child's report pipe, watched until it says whether the exec worked.
    final class ExecWatch {
        let descriptor: FileDescriptor
        let pid: Int32
        let declaration: PluginDeclaration

        init(descriptor: consuming FileDescriptor, pid: Int32, declaration: PluginDeclaration) {
            self.descriptor = descriptor
            self.pid = pid
            self.declaration = declaration
        }
    }

    /// The plugin host's timers, spread over turns so thousands of plugins never hold up a turn.
    enum Work: Hashable {
        /// Output pipes paused for spending their budget may be read again.
        case outputResume
        /// Plugins queued to start get their turn.
        case starts
        /// Exited children that one turn did not collect.
        case reap
        /// Plugins exited a moment ago: end what they left.
        case orphans
        /// The next share of the plugin folders' files to read.
        case folders
    }

    /// How long the loop rests between one turn's share of queued starts and the next (nanoseconds): each start
    /// costs the machine more than heraldd's fork (the child's exec, the program's own start), and without a rest
    /// the starts of thousands of plugins take both cores from the clients being served meanwhile.
    static let startsPause: UInt64 = 10_000_000
    /// How many exited children one turn collects.
    static let exitsPerTurn = 4
    /// How long after a plugin's exit heraldd looks for what it left (nanoseconds).
    static let orphanCheckDelay: UInt64 = 20_000_000

    /// Whether heraldd supervises plugins at all (`--no-plugins` turns it off).
    let enabled: Bool
    let folders: Folders
    var supervisor = Supervisor()
    /// The output pipes, by descriptor.
    var outputs: [Int32: Output] = [:]
    /// The loop's timer for when the supervisor asked to be woken.
    var wakeTimer: TimerID?
    /// The loop's timer for looking at the counts of dropped output lines, while some are owed.
    var countsTimer: TimerID?
    /// The paused output pipes, by descriptor, in the order they resume (every pause lasts at most one window).
    var pausedOutputs: [Int32] = []
    /// The loop's timer for resuming the first of ``pausedOutputs``.
    var resumeTimer: TimerID?
    /// The reading of the folders under way, and the loop's timer for its next share.
    var folderRead: FolderRead?
    var foldersTimer: TimerID?
    /// The loop's timer for the next turn's share of queued starts.
    var startsTimer: TimerID?
    /// The loop's timer for collecting the exits one turn left.
    var reapTimer: TimerID?
    /// The report pipes of children whose exec is not known yet, by descriptor, and their descriptors by pid.
    var execWatches: [Int32: ExecWatch] = [:]
    var execWatchByPID: [Int32: Int32] = [:]
    /// The plugins exited since heraldd last looked for orphans, by pid, and the timer for looking.
    var exitedSinceOrphanCheck: [Int32: String] = [:]
    var orphanTimer: TimerID?
    /// What the record (the state log, or `SOCKET.plugins` without one) holds as live, pid to start time, and how
    /// many lines the file has.
    var recorded: [Int32: UInt64] = [:]
    var recordLines = 0
    /// Orphans kept (their plugin still runs) and already in the record.
    var recordedOrphans: Set<Int32> = []
    /// Set once every plugin has exited after shutdown began (or there were none).
    var shutdownComplete = false
    /// The soft descriptor limit heraldd was started with, which its children get back.
    let inheritedDescriptorLimit: UInt64

    init(enabled: Bool, folders: Folders, inheritedDescriptorLimit: UInt64) {
        self.enabled = enabled
        self.folders = folders
        self.inheritedDescriptorLimit = inheritedDescriptorLimit
        shutdownComplete = !enabled
    }

    /// Words why a plugin's exec failed, naming the cause: its working directory, the interpreter on its `#!`
    /// line, or its program. Those cannot work until something changes, so they are permanent failures.
    static func spawnFailure(
        step: ChildProcesses.SpawnStep,
        errno: Errno,
        executable: String,
        declaration: PluginDeclaration
    ) -> (String, permanent: Bool) {
        switch step {
        case .workingDirectory:
            let directory = declaration.workingDirectory ?? "?"
            return ("cannot change to its WorkingDirectory=\(directory): \(errno)", true)
        case .exec:
            // execve says ENOENT for a missing interpreter too: the program itself is there (it was checked).
            if errno.rawValue == ENOENT || errno.rawValue == EACCES,
                let line = FileSystem.firstLine(of: executable), line.hasPrefix("#!")
            {
                let interpreter = String(
                    line.dropFirst(2).drop { $0 == " " || $0 == "\t" }.prefix { $0 != " " && $0 != "\t" }
                )
                if (try? FileSystem.status(of: interpreter)) == nil || errno.rawValue == EACCES {
                    return ("\(executable): its interpreter \(interpreter) (on its #! line): \(errno)", true)
                }
            }
            let permanent = errno.rawValue == ENOENT || errno.rawValue == EACCES || errno.rawValue == ENOEXEC
            return ("cannot execute \(executable): \(errno)", permanent)
        case .fork, .setup:
            return ("cannot start \(executable): \(errno)", false)
        }
    }
}
