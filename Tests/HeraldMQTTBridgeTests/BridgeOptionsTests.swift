import HeraldCommandLine
import HeraldMQTTBridge
import Testing

struct BridgeOptionsTests {
    @Test func parsesEveryFlag() throws {
        let options = try #require(
            try BridgeOptions.parse([
                "--broker", "mqtt://10.0.0.2:1884", "--export", "build.**", "--export=session.*", "--import", "**",
                "--qos", "0", "--prefix", "home/herald", "--host-id", "laptop-1", "--username", "alice",
                "--password-file", "/run/secret", "--queue-limit", "50", "--keep-alive", "5", "--socket", "/tmp/s",
            ])
        )
        #expect(options.host == "10.0.0.2")
        #expect(options.port == 1884)
        #expect(options.exports == ["build.**", "session.*"])
        #expect(options.imports == ["**"])
        #expect(options.qos == 0)
        #expect(options.prefix == "home/herald")
        #expect(options.hostID == "laptop-1")
        #expect(options.username == "alice")
        #expect(options.passwordFile == "/run/secret")
        #expect(options.queueLimit == 50)
        #expect(options.keepAlive == 5)
        #expect(options.socketPath == "/tmp/s")
    }

    @Test func defaultsToQoS1ThePrefixHeraldAndTenThousandQueued() throws {
        let options = try #require(try BridgeOptions.parse(["--broker", "mqtt://localhost", "--import", "a.*"]))
        #expect(options.host == "localhost")
        #expect(options.port == 1883)
        #expect(options.qos == 1)
        #expect(options.prefix == "herald")
        #expect(options.queueLimit == 10_000)
        #expect(options.hostID == nil)
    }

    @Test func boundsImportedRetainedValuesToAQuarterOfHeralddsByDefault() throws {
        let defaults = try #require(try BridgeOptions.parse(["--broker", "mqtt://broker.lan", "--import", "**"]))
        #expect(defaults.maxImportedRetained == 2_500)
        #expect(defaults.maxImportedRetainedBytes == 16 << 20)
        let set = try #require(
            try BridgeOptions.parse([
                "--broker", "mqtt://broker.lan:1884", "--import", "**", "--max-imported-retained", "7",
                "--max-imported-retained-bytes", "4096",
            ])
        )
        #expect(set.maxImportedRetained == 7)
        #expect(set.maxImportedRetainedBytes == 4096)
        #expect(set.host == "broker.lan" && set.port == 1884, "a host name is kept, to be resolved when connecting")
    }

    @Test func readsAnIPv6Broker() throws {
        let options = try #require(try BridgeOptions.parse(["--broker", "mqtt://[::1]:1999", "--export", "**"]))
        #expect(options.host == "::1")
        #expect(options.port == 1999)
    }

    @Test func answersHelpAndVersionWithTheOptionsListed() throws {
        #expect(try BridgeOptions.parse(["--help"]) == nil)
        #expect(try BridgeOptions.parse(["--version"]) == nil)
        let help = BridgeOptions.spec.helpText
        for option in ["--broker", "--export", "--import", "--qos", "--prefix", "--host-id", "--password-file"] {
            #expect(help.contains(option), "--help does not list \(option)")
        }
        #expect(help.hasPrefix("OVERVIEW:"))
    }

    @Test(arguments: [
        (["--export", "a"], "--broker is required"),
        (["--broker", "mqtt://h"], "give at least one --export or --import pattern"),
        (
            ["--broker", "mqtts://h", "--export", "a"],
            "--broker must be mqtt://HOST:PORT (TLS is not supported), not 'mqtts://h'"
        ),
        (["--broker", "mqtt://h:0", "--export", "a"], "--broker 'mqtt://h:0' has an invalid port"),
        (["--broker", "mqtt://h", "--export", "a", "--qos", "2"], "--qos must be 0 or 1, not '2'"),
        (
            ["--broker", "mqtt://h", "--export", "a", "--host-id", "a.b"],
            "--host-id 'a.b' must be letters, digits, '-' or '_'"
        ),
        (["--broker", "mqtt://h", "--export"], "Missing value for '--export <pattern>'"),
        (["--broker", "mqtt://h", "--bogus"], "Unknown option '--bogus'"),
        (
            ["--broker", "mqtt://h", "--export", "a", "--queue-limit", "0"],
            "The value '0' is invalid for '--queue-limit <count>': must be in the range 1...100000000"
        ),
    ])
    func refusesABadCommandLine(arguments: [String], message: String) {
        #expect(throws: UsageError(message: message)) { try BridgeOptions.parse(arguments) }
    }
}
