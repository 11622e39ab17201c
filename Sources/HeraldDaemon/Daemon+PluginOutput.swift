import HeraldPlugins
import HeraldPosix

/// A plugin's stdout and stderr into heraldd's log: read a bounded share a turn, paused once a pipe's budget is
/// spent, split into lines, rate-limited (issue 27).
extension Daemon {
    /// Once a second while lines are being dropped: log the counts of output lines dropped that are due.
    mutating func pluginOutputCountsDue() {
        plugins.countsTimer = nil
        let now = pluginNow
        var owed = false
        for output in plugins.outputs.values {
            log(output.lines.flush(now: now), of: output.plugin)
            if output.lines.owesCount { owed = true }
        }
        if owed { scheduleOutputCounts() }
    }

    /// Looks at the pipes' counts of dropped lines in a second, unless that is planned already.
    mutating func scheduleOutputCounts() {
        guard plugins.countsTimer == nil else { return }
        plugins.countsTimer = loop.schedule(
            .pluginOutputCounts,
            at: SystemClock.monotonicNanoseconds() + 1_000_000_000
        )
    }

    /// A plugin's output pipe is readable: one read of at most 64 KiB, so a flooding plugin gets a turn's share,
    /// and once its ``OutputBudget`` is spent no read until the window ends: its pipe fills and it blocks.
    mutating func pluginOutputReadable(_ fd: Int32) {
        guard let output = plugins.outputs[fd] else { return }
        let result: IOResult<Int>
        do {
            result = try output.descriptor.read(into: readBuffer)
        } catch {
            logger.warning("plugin \(output.plugin): cannot read its output: \(error)")
            closePluginOutput(fd)
            return
        }
        switch result {
        case .wouldBlock:
            return
        case .processed(0):
            log(output.lines.finish(now: pluginNow), of: output.plugin)
            closePluginOutput(fd)
        case .processed(let count):
            let now = pluginNow
            log(output.lines.feed(UnsafeRawBufferPointer(rebasing: readBuffer[0..<count]), now: now), of: output.plugin)
            if output.lines.owesCount { scheduleOutputCounts() }
            if output.pausedUntil == nil, let resume = output.budget.read(count, now: now) {
                pausePluginOutput(fd, until: resume)
            }
        }
    }

    /// Stops reading `fd` until `resume`. A hang-up is still reported meanwhile (epoll always reports it), and the
    /// reads it causes are bounded by what the pipe holds: its writer is gone.
    mutating func pausePluginOutput(_ fd: Int32, until resume: Instant) {
        guard let output = plugins.outputs[fd], loop.isRegistered(fd), (try? loop.setInterest([], for: fd)) != nil
        else { return }
        output.pausedUntil = resume
        plugins.pausedOutputs.append(fd)
        if plugins.resumeTimer == nil {
            plugins.resumeTimer = loop.schedule(.pluginWork(.outputResume), at: resume.nanoseconds)
        }
    }

    /// Resumes reading the paused pipes whose window has ended.
    mutating func pluginOutputsResumeDue() {
        plugins.resumeTimer = nil
        let now = pluginNow
        var resumed = 0
        for fd in plugins.pausedOutputs {
            guard let output = plugins.outputs[fd], let until = output.pausedUntil else {
                resumed += 1
                continue
            }
            if now < until {
                plugins.resumeTimer = loop.schedule(.pluginWork(.outputResume), at: until.nanoseconds)
                break
            }
            output.pausedUntil = nil
            if loop.isRegistered(fd) { try? loop.setInterest(.readable, for: fd) }
            resumed += 1
        }
        plugins.pausedOutputs.removeFirst(resumed)
    }

    mutating func closePluginOutput(_ fd: Int32) {
        loop.deregister(fd)
        plugins.outputs[fd] = nil
        // A paused descriptor's number may be reused by the next pipe before its resume is due.
        plugins.pausedOutputs.removeAll { $0 == fd }
    }

    func log(_ events: [OutputLines.Event], of plugin: String) {
        for event in events {
            switch event {
            case .line(let line): logger.notice("plugin \(plugin): \(line)")
            case .dropped(let count): logger.warning("plugin \(plugin): \(count) lines of output dropped (too many)")
            }
        }
    }
}
