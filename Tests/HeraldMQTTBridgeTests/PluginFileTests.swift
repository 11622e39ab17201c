import Foundation
import HeraldPlugins
import Testing

/// contrib/plugins/mqtt.plugin as heraldd reads it.
struct MQTTPluginFileTests {
    static let path: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url.path + "/contrib/plugins/mqtt.plugin"
    }()

    @Test func isOffUntilConfigured() throws {
        let text = try String(contentsOfFile: Self.path, encoding: .utf8)
        #expect(try PluginFile(name: "mqtt", path: Self.path, text: text) == .mask)
    }

    @Test func startsTheBridgeWithHeraldOnceEnabled() throws {
        let text = try String(contentsOfFile: Self.path, encoding: .utf8)
            .replacingOccurrences(of: "Enabled=false", with: "Enabled=true")
        guard case .plugin(let plugin) = try PluginFile(name: "mqtt", path: Self.path, text: text) else {
            Issue.record("Enabled=true is still a mask")
            return
        }
        #expect(plugin.activation == .start)
        #expect(plugin.command.first == "herald-mqtt-bridge")
        #expect(plugin.command.contains("--broker"))
    }
}
