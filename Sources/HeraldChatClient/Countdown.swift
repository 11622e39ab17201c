import Synchronization

/// The book's countdown: "3...", "2...", "1..." and "🎉 TEXT", one a second, as a pull-based sequence made with
/// `AsyncStream(unfolding:)`. Cancelling the consuming task ends it at once: the sleep between lines throws and the
/// sequence finishes instead of sending the rest.
enum Countdown {
    static func lines(for text: String, interval: Duration = .seconds(1)) -> AsyncStream<String> {
        let lines = ["3...", "2...", "1...", "🎉 \(text)"]
        let next = Counter()
        return AsyncStream(unfolding: {
            let index = next.take()
            guard index < lines.count else {
                return nil
            }
            if index > 0 {
                do {
                    try await Task.sleep(for: interval)
                } catch {
                    return nil
                }
            }
            return lines[index]
        })
    }

    private final class Counter: Sendable {
        private let value = Mutex(0)

        func take() -> Int {
            value.withLock { value in
                defer { value += 1 }
                return value
            }
        }
    }
}
