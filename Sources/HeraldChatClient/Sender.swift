import ChatCore
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Posts messages to `/chat/say`.
struct Sender: Sendable {
    var url: URL
    var user: String
    var output: Output

    /// Sends `text`, as the user or, with `system`, as a system message; a failure is shown as a notice, since a chat
    /// line that did not go through must not pass silently.
    ///
    /// - Parameter date: the message's date; the server replaces it with its own, but orders presence announcements
    ///   by it (see `Room.messagePosted`).
    func say(_ text: String, system: Bool = false, date: Date = Date()) async {
        let message = Message(user: system ? nil : user, message: text, date: date)
        var request = URLRequest(url: url)
        request.httpMethod = "POST"
        request.timeoutInterval = 10
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        do {
            request.httpBody = try JSONEncoder().encode(message)
            let (body, response) = try await URLSession.shared.data(for: request)
            let status = (response as? HTTPURLResponse)?.statusCode ?? 0
            if status != 200 {
                let reason =
                    ((try? JSONSerialization.jsonObject(with: body)) as? [String: Any])?["reason"] as? String
                    ?? String(decoding: body, as: UTF8.self)
                output.notice("not sent (HTTP \(status)): \(reason)")
            }
        } catch is CancellationError {
            return
        } catch {
            output.notice("not sent: \((error as NSError).localizedDescription)")
        }
    }
}
