// The smallest Herald app: observe the desktop session's went-away / came-back notifications, as
// Blabber observes UIApplication's, but across processes. Run `swift run heraldd` in one terminal,
// this in another, then `swift run herald post session.willResignActive user=alice` in a third.
import Foundation
import Herald

/// `session.willResignActive` as a typed message, in the shape of Foundation's NotificationCenter.Message.
struct WillResignActive: HeraldMessage {
    static let name = "session.willResignActive"
    var user: String?
}

/// Prints one line at once, even into a pipe, so scripts (and the tests) see each notification as it comes.
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

let herald = try await Herald.connect()
// Both subscriptions are live when these calls return: no post made after this point is missed.
let session = try await herald.notifications(matching: "session.*")
let typed = try await herald.messages(of: WillResignActive.self)
say("observing session.* on \(herald.socketPath)")

await withTaskGroup(of: Void.self) { group in
    group.addTask {
        for await note in session {
            let user = note.userInfo?["user"]?.stringValue ?? "someone"
            say("\(note.name): \(user) (sent by pid \(note.sender.pid), uid \(note.sender.uid), seq \(note.sequence))")
        }
    }
    group.addTask {
        for await message in typed {
            say("typed WillResignActive: user \(message.user ?? "unknown")")
        }
    }
}
