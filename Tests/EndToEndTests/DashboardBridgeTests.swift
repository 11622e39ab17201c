import Foundation
import HeraldLaunch
import HeraldTestSupport
import Testing

/// The dashboard shows a real bridge's retained state (issue 32, "the bridges' retained states"): herald-mqtt-bridge
/// on a mosquitto of the test's own posts `bridge.mqtt.HOSTID`, and the first view's Bridges table has it with its
/// value.
@Suite(.serialized) struct DashboardBridgeTests {
    @Test(.requires("mosquitto"), .hangGuard)
    func theBridgesTableShowsTheMQTTBridgesState() async throws {
        let broker = try await TestBroker()
        let host = try await BridgedHost(hostID: "deskA", broker: broker.url, exports: ["x.**"], imports: [])
        do {
            try await host.waitUntilBridging(exports: 1)
            let dashboard = try await DashboardProcess.start(host.daemon)
            defer { dashboard.process.signal(SIGKILL) }
            let row = "<tr><th scope=\"row\">bridge.mqtt.deskA</th><td><pre>{"
            let shown = try await eventually(timeout: .seconds(20)) {
                try await dashboard.request("GET", "/?token=\(dashboard.token)").body.contains(row)
            }
            #expect(shown, "the first view's Bridges table has bridge.mqtt.deskA")
            let page = try await dashboard.request("GET", "/?token=\(dashboard.token)").body
            let bridges = page.components(separatedBy: "id=\"bridges-body\"").last?.prefix(600) ?? ""
            #expect(bridges.contains("bridge.mqtt.deskA"), "\(bridges)")
        } catch {
            Issue.record(error)
        }
        await host.stop()
        await broker.process.stop()
    }
}
