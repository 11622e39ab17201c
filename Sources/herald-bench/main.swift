import HeraldCommandLine

// herald-bench: the peers' harness workload through the Herald library, or the codec and matcher
// microbenchmarks. Exit codes: 0 when every run was ok, 1 when one was not, 64 for a usage error.

await runMain(BenchOptions.spec, version: "herald-bench 0.1.0", options: BenchOptions.init) { options in
    switch options.mode {
    case .micro(let groups):
        let micro = Microbenchmarks(seconds: 0.5)
        var measurements: [Microbenchmarks.Measurement] = []
        if groups.contains("codec") { measurements += micro.codec() }
        if groups.contains("matcher") { measurements += micro.matcher() }
        Terminal.writeStdout(Microbenchmarks.table(measurements))
        return .success
    case .workloads(let names):
        var allOK = true
        for name in names {
            let workload = options.workload(name)
            var runner = WorkloadRunner(
                workload: workload,
                socketPath: options.socketPath,
                subscriberSocketPath: options.subscriberSocketPath,
                brokerPID: options.brokerPID,
                label: options.label,
                timeout: options.timeout ?? (workload.duration + 30),
                drainMilliseconds: options.drainMilliseconds,
                consumersOnReaderThread: options.consumersOnReaderThread,
                streamPerName: options.streamPerName,
                readerThreads: options.readerThreads
            )
            runner.publisherBlocksOnWindow = options.publisherBlocksOnWindow
            let result = await runner.run()
            allOK = allOK && result.isOK
            Terminal.writeStdout(result.json + "\n")
        }
        return allOK ? .success : .failure
    }
}
