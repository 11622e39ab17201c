// swift-tools-version:6.0
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
        .executable(name: "heraldd", targets: ["heraldd"]),
        .executable(name: "herald", targets: ["herald"]),
    ],
    targets: [
        // Pure: frames, the codec, names and patterns. Stdlib only, no Foundation, no I/O.
        .target(name: "HeraldWire", swiftSettings: strict),
        // Pure: the daemon's decisions as values and state machines.
        .target(name: "HeraldBroker", dependencies: ["HeraldWire"], swiftSettings: strict),
        // C: what Glibc does not expose to Swift (epoll, eventfd, signalfd, accept4, SO_PEERCRED).
        .target(name: "CHeraldShim", cSettings: [.define("_GNU_SOURCE")]),
        // The only module that makes syscalls.
        .target(name: "HeraldPosix", dependencies: ["CHeraldShim"], swiftSettings: strict),
        // Hand-written command-line parsing shared by the executables.
        .target(name: "HeraldArguments", swiftSettings: strict),
        // The public client library.
        .target(name: "Herald", dependencies: ["HeraldWire", "HeraldPosix"], swiftSettings: strict),
        .executableTarget(
            name: "heraldd",
            dependencies: ["HeraldWire", "HeraldBroker", "HeraldPosix", "HeraldArguments"],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "herald",
            dependencies: ["Herald", "HeraldWire", "HeraldPosix", "HeraldArguments"],
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
            dependencies: ["HeraldPosix"],
            path: "Tests/HeraldTestSupport",
            swiftSettings: strict
        ),
        .testTarget(name: "HeraldWireTests", dependencies: ["HeraldWire"]),
        .testTarget(name: "HeraldBrokerTests", dependencies: ["HeraldBroker", "HeraldWire"]),
        .testTarget(name: "HeraldPosixTests", dependencies: ["HeraldPosix"]),
        .testTarget(name: "HeraldArgumentsTests", dependencies: ["HeraldArguments"]),
        .testTarget(name: "HeraldTests", dependencies: ["Herald", "HeraldWire", "HeraldTestSupport", "heraldd"]),
        .testTarget(
            name: "EndToEndTests",
            dependencies: [
                "Herald", "HeraldWire", "HeraldPosix", "HeraldTestSupport", "heraldd", "herald", "herald-example",
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
