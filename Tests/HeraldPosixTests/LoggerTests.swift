import Testing

@testable import HeraldPosix

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

@Suite struct LoggerTests {
    @Test(arguments: [
        ("debug", Logger.Level.debug), ("INFO", .info), ("notice", .notice), ("warning", .warning), ("Warn", .warning),
        ("error", .error),
    ])
    func parsesLevelNames(_ text: String, _ level: Logger.Level) {
        #expect(Logger.Level(parsing: text) == level)
    }

    @Test func rejectsUnknownLevelNames() {
        #expect(Logger.Level(parsing: "verbose") == nil)
        #expect(Logger.Level(parsing: "") == nil)
    }

    @Test func ordersLevelsByImportance() {
        #expect(Logger.Level.allCases.sorted() == [.debug, .info, .notice, .warning, .error])
        #expect(Logger.Level.warning > .info)
    }

    @Test func writesOneLinePerMessageAtOrAboveItsLevel() throws {
        var fds: [Int32] = [-1, -1]
        #expect(pipe(&fds) == 0)
        let reader = FileDescriptor(owning: fds[0])
        let writer = FileDescriptor(owning: fds[1])
        let logger = Logger(label: "heraldd", level: .notice, descriptor: writer.rawValue)
        logger.info("hidden")
        logger.notice("listening on /tmp/s")
        logger.error("cannot bind: busy")
        writer.close()

        var output: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 256)
        while case .processed(let n) = try buffer.withUnsafeMutableBytes({ try reader.read(into: $0) }), n > 0 {
            output += buffer[..<n]
        }
        #expect(
            String(decoding: output, as: UTF8.self)
                == "heraldd: notice: listening on /tmp/s\nheraldd: error: cannot bind: busy\n"
        )
    }

    @Test func disabledLoggerNeverEvaluatesItsMessages() {
        var evaluated = false
        func message() -> String {
            evaluated = true
            return "x"
        }
        Logger.disabled.error(message())
        #expect(!evaluated)
        #expect(!Logger.disabled.isEnabled(.error))
    }
}
