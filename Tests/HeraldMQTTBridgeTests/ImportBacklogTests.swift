import HeraldMQTT
import HeraldMQTTBridge
import Testing

struct ImportBacklogTests {
    func publish(_ size: Int, qos: QoS = .atMostOnce) -> Packet {
        .publish(
            .init(
                topic: "t",
                payload: [UInt8](repeating: 0, count: size),
                qos: qos,
                packetIdentifier: qos == .atMostOnce ? 0 : 1
            )
        )
    }

    @Test func dropsQoS0MessagesPastTheCountAndCountsThem() {
        let backlog = ImportBacklog(messageLimit: 2, byteLimit: 1000)
        #expect(backlog.admit(publish(1)))
        #expect(backlog.admit(publish(1)))
        #expect(!backlog.admit(publish(1)))
        #expect(backlog.dropped == 1)
        backlog.handled(publish(1))
        #expect(backlog.waiting == 1)
        #expect(backlog.admit(publish(1)))
        #expect(backlog.dropped == 1)
    }

    @Test func dropsQoS0MessagesPastTheBytesButAlwaysTakesOne() {
        let backlog = ImportBacklog(messageLimit: 100, byteLimit: 100)
        #expect(backlog.admit(publish(500)), "a single message larger than the bound still goes through")
        #expect(!backlog.admit(publish(1)))
        backlog.handled(publish(500))
        #expect(backlog.admit(publish(60)))
        #expect(!backlog.admit(publish(60)))
        #expect(backlog.admit(publish(40)))
        #expect(backlog.dropped == 2)
    }

    @Test func neverDropsQoS1MessagesOrOtherPackets() {
        let backlog = ImportBacklog(messageLimit: 1, byteLimit: 1)
        #expect(backlog.admit(publish(10)))
        #expect(backlog.admit(publish(10, qos: .atLeastOnce)), "QoS 1 is bounded by Receive Maximum instead")
        #expect(backlog.admit(.pingresp))
        #expect(backlog.admit(.puback(.init(packetIdentifier: 1))))
        #expect(backlog.dropped == 0)
        #expect(backlog.waiting == 1)
    }
}
