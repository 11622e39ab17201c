public import Foundation

/// Bottley, the book's chat bot, as a state machine: it answers 5 s after the last user message of a burst, once per
/// burst, with a canned line, or echoes the previous message when someone writes "parrot".
///
/// The owner arms a timer for ``deadline`` after every event and calls ``deadlinePassed(now:)`` when it fires.
public struct Bot: Sendable {
    /// The name the bot posts as.
    public static let name = "Bottley"
    /// How long after the last user message the bot answers.
    public static let delay: TimeInterval = 5

    /// The canned answers.
    public static let lines = [
        "Interesting, tell me more.",
        "I see what you mean.",
        "Ha! That's a good one.",
        "Could you explain that again?",
        "I was just thinking the same thing.",
        "Beep boop. 🤖",
    ]

    /// When the bot answers next; nil when it has nothing to answer.
    public private(set) var deadline: Date?
    private var lastMessage: String?
    private var previousMessage: String?
    private var pick: @Sendable (Int) -> Int

    /// Creates a quiet bot.
    ///
    /// - Parameter pick: chooses an index below its argument; random by default, fixed in tests.
    public init(pick: @escaping @Sendable (Int) -> Int = { Int.random(in: 0..<$0) }) {
        self.pick = pick
    }

    /// A message reached the room. A user message (not the bot's, not a system message) starts or extends a burst.
    public mutating func messagePosted(_ message: Message, now: Date) {
        guard let user = message.user, user != Self.name else {
            return
        }
        previousMessage = lastMessage
        lastMessage = message.message
        deadline = now.addingTimeInterval(Self.delay)
    }

    /// The timer fired.
    ///
    /// - Returns: the bot's answer to post, or nil when the deadline has not passed (a burst extended it).
    public mutating func deadlinePassed(now: Date) -> Message? {
        guard let deadline, deadline <= now, let lastMessage else {
            return nil
        }
        self.deadline = nil
        let text: String
        if lastMessage.lowercased() == "parrot" {
            text = previousMessage.map { "🦜 \($0)" } ?? "🦜 parrot"
        } else {
            text = Self.lines[pick(Self.lines.count)]
        }
        return Message(user: Self.name, message: text, date: now)
    }
}
