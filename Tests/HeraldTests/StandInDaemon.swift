import Foundation
import HeraldPosix
import HeraldTestSupport
import HeraldWire
import Synchronization

/// A stand-in for heraldd that misbehaves on purpose, for the library's fault-injection tests: it listens on a socket
/// of its own and treats each connection as its script says (``Fault``). It is not a daemon: it answers `HELLO` and
/// acknowledges requests, and routes nothing.
///
/// Each connection is served by a thread of its own with blocking I/O; ``stop()`` shuts every connection down and
/// waits for those threads to end.
final class StandInDaemon: Sendable {
    /// What the stand-in does with one connection.
    enum Fault: Sendable {
        /// Answers `HELLO` with `WELCOME`, then closes.
        case closeAfterWelcome
        /// Reads `HELLO` and everything after it, and answers nothing: the handshake never ends.
        case silentAfterHello
        /// Answers the first `count` frames (`HELLO` with `WELCOME`, requests with `ACK`), then reads and answers
        /// nothing more.
        case silentAfterFrames(Int)
        /// Answers the first `count` frames, then closes.
        case closeAfterFrames(Int)
        /// Answers `HELLO`, then sends the first bytes of a frame and closes with input unread, mid-frame.
        case resetMidFrame
        /// Accepts, and answers nothing: not even `HELLO`, which it does not look at.
        case neverAnswer
        /// Answers every frame.
        case healthy
    }

    let socketPath: String
    private let listener: Int32
    /// Written to wake the accepting thread when stopping.
    private let wake: Int32
    private let wakeOther: Int32
    private let script: @Sendable (Int) -> Fault
    private struct State {
        var connections: Set<Int32> = []
        /// Per connection, by index: the patterns subscribed and not unsubscribed, by subscription id.
        var subscriptions: [Int: [UInt32: String]] = [:]
        /// Per connection, by index: the frames read.
        var framesRead: [Int: Int] = [:]
        /// The connections whose thread still serves them.
        var serving: Set<Int> = []
        var accepted = 0
        var stopped = false
        var threadsRunning = 0
    }
    private let state = Mutex(State())
    private let ended = DispatchSemaphore(value: 0)

    /// How many connections it has accepted.
    var accepted: Int { state.withLock { $0.accepted } }

    /// The patterns connection `index` holds subscribed, as a daemon would count them, sorted.
    func subscriptions(onConnection index: Int) -> [String] {
        state.withLock { ($0.subscriptions[index] ?? [:]).values.sorted() }
    }

    /// How many frames connection `index` has sent.
    func framesRead(onConnection index: Int) -> Int {
        state.withLock { $0.framesRead[index] ?? 0 }
    }

    /// How many connections are still open from the client's side (their thread has not read the end yet).
    var openConnections: Int { state.withLock { $0.serving.count } }

    /// Ends every connection open now, as a daemon that dies would; it goes on accepting new ones.
    func dropConnections() {
        state.withLock { state in
            for raw in state.connections { FileDescriptor.shutdown(ownedElsewhere: raw) }
        }
    }

    /// Listens on `socketPath`, removing a stale socket there, and serves connection `n` (from 0) as `script(n)` says.
    init(socketPath: String, script: @escaping @Sendable (Int) -> Fault) throws {
        unlink(socketPath)
        self.socketPath = socketPath
        self.script = script
        listener = try UnixSocket.listen(path: socketPath).release()
        let pair = try UnixSocket.pair()
        let first = pair.first
        let second = pair.second
        wake = first.release()
        wakeOther = second.release()
        state.withLock { $0.threadsRunning = 1 }
        let thread = Thread { [self] in acceptLoop() }
        thread.name = "stand-in-daemon"
        thread.start()
    }

    /// Serves connection `n` as `fault` says.
    convenience init(socketPath: String, fault: Fault) throws {
        try self.init(socketPath: socketPath) { _ in fault }
    }

    private func acceptLoop() {
        let listening = FileDescriptor(owning: listener)
        defer { threadEnded() }
        while true {
            guard let ready = try? listening.waitForInput(orFrom: wakeOther, timeoutMilliseconds: -1), !ready.other
            else { return }
            guard let accepted = try? UnixSocket.accept(listening) else { continue }
            let raw = accepted.release()
            let index = state.withLock { state -> Int? in
                guard !state.stopped else { return nil }
                state.connections.insert(raw)
                state.accepted += 1
                state.threadsRunning += 1
                return state.accepted - 1
            }
            guard let index else {
                FileDescriptor(owning: raw).close()
                return
            }
            let fault = script(index)
            let thread = Thread { [self] in serve(raw, index, fault) }
            thread.name = "stand-in-connection"
            thread.start()
        }
    }

    private func threadEnded() {
        let last = state.withLock { state in
            state.threadsRunning -= 1
            return state.threadsRunning == 0
        }
        if last { ended.signal() }
    }

    private func serve(_ raw: Int32, _ index: Int, _ fault: Fault) {
        state.withLock { _ = $0.serving.insert(index) }
        defer { state.withLock { _ = $0.serving.remove(index) } }
        let socket = FileDescriptor(owning: raw)
        serve(socket, index, fault)
        // Closing is shutting down: the descriptor itself is closed by `stop`, once no thread can use it.
        try? socket.shutdown(read: true, write: true)
        _ = socket.release()
        threadEnded()
    }

    private func serve(_ socket: borrowing FileDescriptor, _ index: Int, _ fault: Fault) {
        try? socket.setNonBlocking(false)
        var buffer = [UInt8](repeating: 0, count: 65_536)
        if case .neverAnswer = fault {
            // Takes whatever comes, unparsed, until the client goes away or `stop` shuts the connection down.
            while true {
                let result = buffer.withUnsafeMutableBytes { raw in try? socket.read(into: raw) }
                guard case .processed(let count)? = result, count > 0 else { return }
            }
        }
        var decoder = FrameDecoder(role: .daemon, maxPayload: 1 << 20)
        var answered = 0
        while true {
            let frame: Frame
            do {
                guard let next = try decoder.next() else {
                    let result = buffer.withUnsafeMutableBytes { raw in try? socket.read(into: raw) }
                    guard case .processed(let count)? = result, count > 0 else { return }
                    decoder.append(contentsOf: buffer[0..<count])
                    continue
                }
                frame = next
            } catch {
                return
            }
            state.withLock { state in
                state.framesRead[index, default: 0] += 1
                switch frame {
                case .subscribe(let subscribe):
                    state.subscriptions[index, default: [:]][subscribe.subscription] =
                        subscribe.pattern.text
                case .unsubscribe(let unsubscribe): state.subscriptions[index]?[unsubscribe.subscription] = nil
                default: break
                }
            }
            switch fault {
            case .silentAfterHello: continue
            case .silentAfterFrames(let count) where answered >= count: continue
            case .closeAfterFrames(let count) where answered >= count: return
            default: break
            }
            guard let answer = Self.answer(to: frame) else {
                if case .bye = frame { return }
                continue
            }
            send(answer.encoded(), on: socket)
            answered += 1
            if case .closeAfterFrames(let count) = fault, answered >= count { return }
            if case .welcome = answer {
                switch fault {
                case .closeAfterWelcome:
                    return
                case .resetMidFrame:
                    // Six bytes of a frame announced as 30: a read of half a frame, then the end.
                    send([30, 0, 0, 0, FrameType.ack.rawValue, 0], on: socket)
                    return
                default:
                    break
                }
            }
        }
    }

    private func send(_ bytes: [UInt8], on socket: borrowing FileDescriptor) {
        _ = bytes.withUnsafeBytes { raw in Result { () throws(SystemError) in try socket.writeAll(raw) } }
    }

    /// The answer a daemon would give, as far as the library's tests need one.
    private static func answer(to frame: Frame) -> Frame? {
        switch frame {
        case .hello:
            return .welcome(
                Frame.Welcome(
                    // Version 1, which its decoder reads: a version 2 client sends flags version 1 does not define.
                    version: 1,
                    maxSubscriptions: 1024,
                    maxPayload: UInt32(Limits.defaultMaxPayload),
                    daemonPID: UInt32(getpid()),
                    server: "stand-in 0"
                )
            )
        case .bye, .unsubscribe:
            return nil
        default:
            guard let request = frame.requestField, request != 0 else { return nil }
            return .ack(Frame.Ack(request: request, sequence: 0))
        }
    }

    /// Stops accepting, shuts every connection down, waits for their threads to end, and removes the socket.
    func stop() {
        state.withLock { state in
            state.stopped = true
            // Under the lock a connection's thread takes to leave the set before it closes its descriptor.
            for raw in state.connections { FileDescriptor.shutdown(ownedElsewhere: raw) }
        }
        var byte: UInt8 = 1
        _ = write(wake, &byte, 1)
        ended.wait()
        for raw in state.withLock({ $0.connections }) { FileDescriptor(owning: raw).close() }
        FileDescriptor(owning: wake).close()
        FileDescriptor(owning: wakeOther).close()
        unlink(socketPath)
    }
}
