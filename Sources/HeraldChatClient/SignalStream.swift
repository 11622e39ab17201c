import Dispatch

#if canImport(Glibc)
import Glibc
#endif

/// Signals as an `AsyncStream`, so that Ctrl-C ends the chat through cancellation (the room sees the client leave)
/// rather than killing the process in the middle of a write.
enum SignalStream {
    /// Stops the default action of `numbers` and delivers them in the stream instead; for the life of the process.
    static func make(_ numbers: [Int32]) -> AsyncStream<Int32> {
        let (stream, continuation) = AsyncStream.makeStream(of: Int32.self)
        for number in numbers {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            // The handler keeps its source alive: signals are handled until the process exits.
            source.setEventHandler { [source] in
                _ = source
                continuation.yield(number)
            }
            source.resume()
        }
        return stream
    }
}
