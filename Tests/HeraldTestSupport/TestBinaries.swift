import Foundation

/// Finds the executables SwiftPM built for this test run. Test targets depend on the executable
/// targets, so they are built next to the test bundle.
public enum TestBinaries {
    /// The folder holding the built products.
    public static let directory: String = {
        if let override = ProcessInfo.processInfo.environment["HERALD_BUILD_DIR"], !override.isEmpty {
            return override
        }
        var candidates: [URL] = [Bundle.main.bundleURL, Bundle.main.executableURL?.deletingLastPathComponent()]
            .compactMap { $0 }
        candidates.append(URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent())
        for candidate in candidates {
            var url = candidate
            // Walk up out of an .xctest bundle on platforms that use bundle folders.
            for _ in 0..<4 {
                if FileManager.default.isExecutableFile(atPath: url.appendingPathComponent("heraldd").path) {
                    return url.path
                }
                url.deleteLastPathComponent()
            }
        }
        fatalError(
            "cannot find the built heraldd next to the test bundle (looked in \(candidates.map(\.path))); "
                + "run the tests with 'swift test', or set HERALD_BUILD_DIR"
        )
    }()

    /// The path of the built executable `name`.
    public static func path(_ name: String) -> String {
        let path = directory + "/" + name
        precondition(FileManager.default.isExecutableFile(atPath: path), "\(path) was not built")
        return path
    }
}
