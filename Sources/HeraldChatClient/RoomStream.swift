import Foundation
import Synchronization

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A `GET /chat/room?NAME` stream as an `AsyncStream` of lines, built by adapting URLSession's delegate callbacks:
/// the pattern "Modern Concurrency in Swift" teaches for wrapping a delegate API in a sequence.
///
/// The stream is bounded (``bufferLimit`` lines; a consumer that far behind loses the oldest and is told), lines are
/// bounded (``maximumLineBytes``), and ending the iteration (or cancelling its task) cancels the request.
enum RoomStream {
    /// What the stream delivers.
    enum Event: Sendable {
        /// One line, without its CRLF.
        case line(String)
        /// The server answered with something other than 200: the status and the body's reason, if any.
        case refused(status: Int, reason: String)
        /// Lines were dropped: the consumer fell behind, or a line was too long.
        case dropped(Int)
        /// The connection ended, with the error if it failed.
        case ended(String?)
    }

    static let bufferLimit = 4096
    static let maximumLineBytes = 1 << 20

    /// Opens the stream; the request starts at once.
    ///
    /// - Parameter url: the room URL.
    static func open(_ url: URL) -> AsyncStream<Event> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: Event.self,
            bufferingPolicy: .bufferingNewest(bufferLimit)
        )
        let delegate = Delegate(continuation: continuation)
        let configuration = URLSessionConfiguration.ephemeral
        // The book's server never ends the stream and sends nothing when the room is quiet: no request timeout that
        // a quiet room could trip (a week, after which the client simply reconnects).
        configuration.timeoutIntervalForRequest = 7 * 24 * 3600
        configuration.timeoutIntervalForResource = 7 * 24 * 3600
        let session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil)
        var request = URLRequest(url: url)
        request.timeoutInterval = 7 * 24 * 3600
        let task = session.dataTask(with: request)
        continuation.onTermination = { _ in
            // The session holds its delegate strongly until it is invalidated; this breaks that cycle.
            task.cancel()
            session.invalidateAndCancel()
        }
        task.resume()
        return stream
    }

    /// Receives URLSession's callbacks and turns the body into lines.
    final class Delegate: NSObject, URLSessionDataDelegate, Sendable {
        private struct State {
            var partial: [UInt8] = []
            var status = 0
            var errorBody: [UInt8] = []
        }

        private let continuation: AsyncStream<Event>.Continuation
        private let state = Mutex(State())

        init(continuation: AsyncStream<Event>.Continuation) {
            self.continuation = continuation
        }

        func urlSession(
            _ session: URLSession,
            dataTask: URLSessionDataTask,
            didReceive response: URLResponse,
            completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
        ) {
            let status = (response as? HTTPURLResponse)?.statusCode ?? 0
            state.withLock { $0.status = status }
            completionHandler(.allow)
        }

        func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
            let (lines, dropped): ([String], Int) = state.withLock { state in
                guard state.status == 200 else {
                    if state.errorBody.count < 4096 {
                        state.errorBody.append(contentsOf: data.prefix(4096 - state.errorBody.count))
                    }
                    return ([], 0)
                }
                var lines: [String] = []
                var dropped = 0
                for byte in data {
                    if byte == 0x0A {
                        if state.partial.last == 0x0D {
                            state.partial.removeLast()
                        }
                        if !state.partial.isEmpty {
                            lines.append(String(decoding: state.partial, as: UTF8.self))
                        }
                        state.partial.removeAll(keepingCapacity: true)
                    } else if state.partial.count < RoomStream.maximumLineBytes {
                        state.partial.append(byte)
                    } else {
                        // Too long to be a chat line: skip the rest of it.
                        if state.partial.count == RoomStream.maximumLineBytes {
                            dropped += 1
                            state.partial.append(byte)
                        }
                    }
                }
                return (lines, dropped)
            }
            if dropped > 0 {
                continuation.yield(.dropped(dropped))
            }
            for line in lines {
                if case .dropped = continuation.yield(.line(line)) {
                    continuation.yield(.dropped(1))
                }
            }
        }

        func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
            let (status, body) = state.withLock { ($0.status, $0.errorBody) }
            if status != 0, status != 200 {
                let reason =
                    ((try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any])?["reason"] as? String
                    ?? String(decoding: body, as: UTF8.self)
                continuation.yield(.refused(status: status, reason: reason))
            } else {
                continuation.yield(.ended(error.map { ($0 as NSError).localizedDescription }))
            }
            continuation.finish()
            session.finishTasksAndInvalidate()
        }
    }
}
