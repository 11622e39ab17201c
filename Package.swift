// swift-tools-version:6.2
// Herald: a NotificationCenter for a whole desktop session.
// The package depends on the Swift toolchain alone: no third-party packages.
import PackageDescription

let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "Herald",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "Herald", targets: ["Herald"]),
        // The client without NotificationCenter, importing FoundationEssentials at most: for a small long-lived
        // program that should not map the whole of Foundation and ICU (herald-dbus-bridge is one).
        .library(name: "HeraldCore", targets: ["HeraldCore"]),
        .executable(name: "heraldd", targets: ["heraldd"]),
        .executable(name: "herald", targets: ["herald"]),
        .executable(name: "herald-chat-server", targets: ["herald-chat-server"]),
        .executable(name: "herald-chat", targets: ["herald-chat"]),
        .executable(name: "herald-bench", targets: ["herald-bench"]),
        .executable(name: "herald-mqtt-bridge", targets: ["herald-mqtt-bridge"]),
        .executable(name: "herald-dbus-bridge", targets: ["herald-dbus-bridge"]),
    ],
    targets: [
        // Pure: frames, the codec, names and patterns. Stdlib only, no Foundation, no I/O.
        .target(name: "HeraldWire", swiftSettings: strict),
        // Pure: the daemon's decisions as values and state machines.
        .target(name: "HeraldBroker", dependencies: ["HeraldWire"], swiftSettings: strict),
        // Pure: plugin files, the discovery rules and the supervisor's state machine. No I/O, no clock.
        .target(name: "HeraldPlugins", dependencies: ["HeraldWire"], swiftSettings: strict),
        // Pure: the MQTT 5.0 codec and the Herald name ↔ topic mapping of the MQTT bridge. Stdlib only, no I/O.
        .target(name: "HeraldMQTT", swiftSettings: strict),
        // Pure: the D-Bus wire format (signatures, values, messages, names, match rules). Stdlib only, no I/O.
        .target(name: "HeraldDBus", swiftSettings: strict),
        // The D-Bus client: the bus address, SASL EXTERNAL, calls with timeouts, signals as AsyncSequences and
        // reconnection, on one thread of its own through HeraldPosix.
        .target(name: "HeraldDBusClient", dependencies: ["HeraldDBus", "HeraldPosix"], swiftSettings: strict),
        // C: what Glibc does not expose to Swift (epoll, eventfd, signalfd, accept4, SO_PEERCRED).
        .target(name: "CHeraldShim", cSettings: [.define("_GNU_SOURCE")]),
        // The only module that makes syscalls.
        .target(name: "HeraldPosix", dependencies: ["CHeraldShim"], swiftSettings: strict),
        // What every executable shares: hand-written argument parsing with swift-argument-parser's conventions,
        // standard output and error, SIGINT/SIGTERM as an AsyncSequence, and `runMain`.
        .target(name: "HeraldCommandLine", dependencies: ["HeraldPosix"], swiftSettings: strict),
        // The client library without Foundation's NotificationCenter: the connection, posts, subscriptions, typed
        // messages. It imports FoundationEssentials at most, so a program that links only this (herald-dbus-bridge)
        // does not map the whole of Foundation and ICU.
        .target(name: "HeraldCore", dependencies: ["HeraldWire", "HeraldPosix"], swiftSettings: strict),
        // The public client library that apps import: HeraldCore re-exported, plus the NotificationCenter integration.
        .target(name: "Herald", dependencies: ["HeraldCore", "HeraldWire", "HeraldPosix"], swiftSettings: strict),
        // The daemon as a library: its options, the event loop that carries out the broker's decisions, and
        // `DaemonMain`, which heraldd and `herald demo` both run.
        .target(
            name: "HeraldDaemon",
            dependencies: ["HeraldWire", "HeraldBroker", "HeraldPosix", "HeraldCommandLine", "HeraldPlugins"],
            swiftSettings: strict
        ),
        .executableTarget(name: "heraldd", dependencies: ["HeraldDaemon"], swiftSettings: strict),
        // Starting Herald's programs as child processes and waiting until they are ready: the one way both
        // `herald demo` and the end-to-end tests start a daemon. Linked by herald and the tests, never by heraldd.
        .target(name: "HeraldLaunch", dependencies: ["HeraldPosix"], swiftSettings: strict),
        // `herald demo` links the daemon, the chat server and the chat client, and runs each as a hidden role of
        // its own binary, so `swift run herald demo` on a fresh clone needs no other product built.
        .executableTarget(
            name: "herald",
            dependencies: [
                "Herald", "HeraldCommandLine", "HeraldDaemon", "HeraldChatServer", "HeraldChatClient", "HeraldLaunch",
                "HeraldDashboard",
            ],
            swiftSettings: strict
        ),
        // Pure: the Blabber chat protocol's types (Message, ServerStatus), shared by server and client.
        .target(name: "ChatCore", swiftSettings: strict),
        // A small, strict HTTP/1.1 server on an epoll loop of our own: parsing is pure, I/O goes through
        // HeraldPosix.
        .target(name: "HeraldHTTP", dependencies: ["HeraldPosix", "HeraldWire"], swiftSettings: strict),
        // `herald dashboard` as a library: the model of names, posts and rates, the access checks and the page (pure),
        // and the server that streams them to the page on HeraldHTTP.
        .target(
            name: "HeraldDashboard",
            dependencies: ["Herald", "HeraldHTTP", "HeraldPosix", "HeraldWire"],
            swiftSettings: strict
        ),
        // The chat server as a library: routing and the room on HeraldHTTP, and `ChatServerMain`.
        .target(
            name: "HeraldChatServer",
            dependencies: ["ChatCore", "HeraldHTTP", "HeraldPosix", "HeraldCommandLine"],
            swiftSettings: strict
        ),
        .executableTarget(name: "herald-chat-server", dependencies: ["HeraldChatServer"], swiftSettings: strict),
        // The terminal chat client as a library: the room stream, presence through Herald, and `ChatClientMain`.
        .target(
            name: "HeraldChatClient",
            dependencies: ["ChatCore", "Herald", "HeraldCommandLine"],
            swiftSettings: strict
        ),
        .executableTarget(name: "herald-chat", dependencies: ["HeraldChatClient"], swiftSettings: strict),
        // The MQTT bridge as a library: its options, the export queue, the broker connection and the loop.
        .target(
            name: "HeraldMQTTBridge",
            dependencies: ["HeraldCore", "HeraldMQTT", "HeraldPosix", "HeraldCommandLine"],
            swiftSettings: strict
        ),
        .executableTarget(name: "herald-mqtt-bridge", dependencies: ["HeraldMQTTBridge"], swiftSettings: strict),
        // Pure: the desktop's D-Bus state as Herald posts, one value per source (lock, sleep, idle, battery, network,
        // players, notifications). No I/O, no clock.
        .target(name: "HeraldDesktop", dependencies: ["HeraldDBus"], swiftSettings: strict),
        // The D-Bus bridge as a library: both buses, the sources' services as they come and go, and the loop. On
        // HeraldCore, not Herald: nothing it links imports the whole of Foundation (issue 30: RSS under 20 MiB).
        .target(
            name: "HeraldDBusBridge",
            dependencies: [
                "HeraldCore", "HeraldDBus", "HeraldDBusClient", "HeraldDesktop", "HeraldPosix", "HeraldCommandLine",
            ],
            swiftSettings: strict
        ),
        .executableTarget(name: "herald-dbus-bridge", dependencies: ["HeraldDBusBridge"], swiftSettings: strict),
        // The benchmark workload of shared/bench/peers, through the Herald library on both ends.
        .executableTarget(
            name: "herald-bench",
            dependencies: ["Herald", "HeraldWire", "HeraldBroker", "HeraldPosix", "HeraldCommandLine"],
            swiftSettings: strict
        ),
        // The cost figures of the D-Bus codec and client (issue 29): decoding, signal latency, idle wake-ups.
        .executableTarget(
            name: "herald-dbus-bench",
            dependencies: ["HeraldDBus", "HeraldDBusClient", "HeraldPosix", "Herald"],
            swiftSettings: strict
        ),
        // The README's Swift program: observes session.* and prints each post with its sender.
        .executableTarget(
            name: "herald-example",
            dependencies: ["Herald"],
            path: "Examples/herald-example",
            swiftSettings: strict
        ),
        // Starts the real built heraldd on a temporary socket for end-to-end tests.
        .target(
            name: "HeraldTestSupport",
            dependencies: ["HeraldPosix", "HeraldWire", "HeraldLaunch", "CHeraldShim"],
            path: "Tests/HeraldTestSupport",
            swiftSettings: strict
        ),
        .testTarget(name: "HeraldWireTests", dependencies: ["HeraldWire"]),
        .testTarget(name: "HeraldBrokerTests", dependencies: ["HeraldBroker", "HeraldWire"]),
        .testTarget(name: "HeraldPluginsTests", dependencies: ["HeraldPlugins", "HeraldWire"]),
        .testTarget(name: "HeraldMQTTTests", dependencies: ["HeraldMQTT"]),
        .testTarget(name: "HeraldDBusTests", dependencies: ["HeraldDBus"]),
        .testTarget(name: "HeraldDesktopTests", dependencies: ["HeraldDesktop", "HeraldDBus"]),
        .testTarget(
            name: "HeraldDBusBridgeTests",
            dependencies: [
                "HeraldDBusBridge", "Herald", "HeraldDBusClient", "HeraldDBus", "HeraldPosix", "HeraldLaunch",
                "HeraldTestSupport",
                "heraldd", "herald", "herald-dbus-bridge", "herald-chat", "herald-chat-server",
            ]
        ),
        .testTarget(
            name: "HeraldDBusClientTests",
            dependencies: ["HeraldDBusClient", "HeraldDBus", "HeraldPosix", "HeraldLaunch", "HeraldTestSupport"]
        ),
        .testTarget(
            name: "HeraldMQTTBridgeTests",
            dependencies: ["HeraldMQTTBridge", "HeraldMQTT", "HeraldPlugins", "HeraldCommandLine"]
        ),
        .testTarget(name: "HeraldPosixTests", dependencies: ["HeraldPosix", "HeraldTestSupport"]),
        .testTarget(name: "HeraldCommandLineTests", dependencies: ["HeraldCommandLine"]),
        .testTarget(name: "HeraldLaunchTests", dependencies: ["HeraldLaunch"]),
        .testTarget(name: "ChatCoreTests", dependencies: ["ChatCore"]),
        .testTarget(name: "HeraldHTTPTests", dependencies: ["HeraldHTTP", "HeraldPosix"]),
        .testTarget(name: "HeraldDashboardTests", dependencies: ["HeraldDashboard", "HeraldHTTP", "Herald"]),
        .testTarget(
            name: "HeraldTests",
            dependencies: [
                "Herald", "HeraldCore", "HeraldWire", "HeraldPosix", "HeraldLaunch", "HeraldTestSupport", "heraldd",
                "herald",
            ]
        ),
        .testTarget(
            name: "EndToEndTests",
            dependencies: [
                "Herald", "HeraldWire", "HeraldBroker", "HeraldPosix", "HeraldLaunch", "HeraldTestSupport", "heraldd",
                "herald", "herald-example",
                "herald-chat-server", "herald-chat", "herald-bench", "ChatCore", "HeraldPlugins", "herald-mqtt-bridge",
                "HeraldMQTT", "herald-dbus-bridge",
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
