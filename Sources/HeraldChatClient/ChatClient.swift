import ChatCore
import Foundation
import HeraldCommandLine

/// The terminal chat: the room stream with reconnection, stdin, presence, and how the session ends.
struct ChatClient: Sendable {
    /// Why the chat ended.
    enum Ending: Sendable {
        /// `/quit` or the end of input: exit 0.
        case quit
        /// The server refuses this user (a 4xx on the room): exit 1.
        case refused(String)
        /// A signal: exit 128 + its number.
        case signal(Int32)
    }

    var options: ClientOptions
    var output: Output
    var sender: Sender

    init(options: ClientOptions) {
        self.options = options
        output = Output(json: options.json)
        sender = Sender(url: options.sayURL, user: options.user, output: output)
    }

    /// Runs until `/quit`, the end of input, a refusal, or one of `signals`; everything started here has ended when
    /// this returns.
    func run(signals: AsyncStream<Int32>) async -> Ending {
        await withTaskGroup(of: Ending?.self) { group in
            group.addTask {
                for await number in signals {
                    return .signal(number)
                }
                return nil
            }
            group.addTask { await readInput() }
            group.addTask { await listen() }
            if options.presence {
                group.addTask {
                    await PresenceReporter(user: options.user, socket: options.socket, sender: sender, output: output)
                        .run()
                    return nil
                }
            }
            var ending: Ending?
            while ending == nil, let next = await group.next() {
                ending = next
            }
            group.cancelAll()
            return ending ?? .quit
        }
    }

    /// Sends what the user types; `/countdown` runs alongside, and everything ends with `/quit` or the input.
    private func readInput() async -> Ending {
        await withTaskGroup(of: Void.self) { countdowns in
            defer { countdowns.cancelAll() }
            for await line in StandardInput.lines() {
                let text = line.trimmingCharacters(in: .whitespaces)
                if text.isEmpty {
                    continue
                }
                if text == "/quit" {
                    return .quit
                }
                if text.hasPrefix("/countdown") {
                    let rest = text.dropFirst("/countdown".count).trimmingCharacters(in: .whitespaces)
                    countdowns.addTask {
                        for await step in Countdown.lines(for: rest.isEmpty ? "Go!" : rest) {
                            await sender.say(step)
                        }
                    }
                    continue
                }
                await sender.say(text)
            }
            // The end of input is a quit, once any countdown has finished.
            await countdowns.waitForAll()
            return .quit
        }
    }

    /// Follows the room, reconnecting with exponential backoff (0.5 s doubling to 8 s) when the stream ends.
    private func listen() async -> Ending? {
        var failures = 0
        var seen = RecentIDs(capacity: 1024)
        while !Task.isCancelled {
            output.notice(failures == 0 ? "connecting to \(options.server.absoluteString)" : "reconnecting")
            var receivedAny = false
            var endReason = "the server closed the stream"
            for await event in RoomStream.open(options.roomURL) {
                switch event {
                case .line(let raw):
                    if !receivedAny {
                        receivedAny = true
                        failures = 0
                    }
                    let line = ChatLine(decoding: Array(raw.utf8))
                    if case .message(let message) = line, !seen.insert(message.id) {
                        // Replayed history after a reconnect: already shown.
                        continue
                    }
                    output.show(raw, line)
                case .refused(let status, let reason):
                    if (400..<500).contains(status) {
                        return .refused("the server refused the room (HTTP \(status)): \(reason)")
                    }
                    endReason = "HTTP \(status): \(reason)"
                case .dropped(let count):
                    output.notice("\(count) line(s) dropped: too long, or arriving faster than shown")
                case .ended(let error):
                    if let error {
                        endReason = error
                    }
                }
            }
            if Task.isCancelled {
                return nil
            }
            let delay = min(0.5 * Double(1 << min(failures, 4)), 8)
            failures += 1
            output.notice("disconnected (\(endReason)); reconnecting in \(delay) s")
            do {
                try await Task.sleep(for: .seconds(delay))
            } catch {
                return nil
            }
        }
        return nil
    }
}

/// The ids of the last messages shown, to skip the history a reconnect replays; bounded.
struct RecentIDs {
    private var order: [UUID] = []
    private var members: Set<UUID> = []
    let capacity: Int

    init(capacity: Int) {
        self.capacity = capacity
    }

    /// Adds `id`; false if it was already there.
    mutating func insert(_ id: UUID) -> Bool {
        guard members.insert(id).inserted else {
            return false
        }
        order.append(id)
        if order.count > capacity {
            members.remove(order.removeFirst())
        }
        return true
    }
}

/// Standard input as lines.
enum StandardInput {
    /// The lines of standard input, read by a dedicated thread because reading a terminal blocks. The thread ends at
    /// the end of input or with the process; the stream is bounded, and the reader waits for nothing.
    static func lines() -> AsyncStream<String> {
        let (stream, continuation) = AsyncStream.makeStream(of: String.self, bufferingPolicy: .bufferingOldest(1024))
        let thread = Thread {
            while let line = readLine(strippingNewline: true) {
                continuation.yield(line)
            }
            continuation.finish()
        }
        thread.name = "stdin"
        thread.start()
        return stream
    }
}
