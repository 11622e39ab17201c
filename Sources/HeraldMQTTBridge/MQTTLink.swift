/// The bridge's handle on one connection to the broker, served by ``BridgeIO``: what it writes goes to that
/// connection only, and once the connection has ended (a new one has a new generation) it goes nowhere.
struct MQTTLink {
    let io: BridgeIO
    let generation: Int

    /// Writes `bytes` now, as far as the socket takes them; the I/O thread writes the rest when there is room.
    func send(_ bytes: [UInt8]) {
        io.send(bytes, generation: generation)
    }

    /// Writes what the socket takes of the output, then closes; the I/O thread reports `.closed`.
    func close() {
        io.close(generation: generation)
    }
}
