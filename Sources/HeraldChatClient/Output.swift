import ChatCore
import Foundation
import HeraldCommandLine

/// Where everything the user sees goes: room lines and the client's own notices, as text or JSON lines.
struct Output: Sendable {
    var json: Bool
    let transcript = Transcript()

    /// A line from the server.
    func show(_ raw: String, _ line: ChatLine) {
        if json {
            Terminal.writeStdout(raw + "\n")
        } else if let text = transcript.text(for: line) {
            Terminal.writeStdout(text + "\n")
        }
    }

    /// One of the client's own status lines. In text mode it is escaped like the room's lines, since it can carry a
    /// server's words (an error's reason).
    func notice(_ text: String) {
        if json {
            let encoded = (try? JSONSerialization.data(withJSONObject: ["notice": text])).map {
                String(decoding: $0, as: UTF8.self)
            }
            Terminal.writeStdout((encoded ?? "{\"notice\":\"?\"}") + "\n")
        } else {
            Terminal.writeStdout("-- \(Transcript.escaped(text))\n")
        }
    }
}
