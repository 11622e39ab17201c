import HeraldPosix
import HeraldTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The state log's file: appends by `pwrite`, and through a shared mapping whose space fallocate reserved.
@Suite struct LogFileTests {
    static let terminator: [UInt8] = [0, 0, 0, 0] + Array("HEND".utf8)

    /// What a reader that opened the file afresh finds in it.
    static func contents(of log: LogFile) throws -> [UInt8] {
        try LogFile(adopting: FileDescriptor(owning: dup(log.descriptor.rawValue))).readAll(limit: 1 << 24)
    }

    @Test func pwriteAppendsEndTheFileWithTheLog() throws {
        let log = try LogFile.memory(name: "test-log")
        try log.append(Array("abc".utf8))
        try log.append(Array("de".utf8))
        #expect(log.length == 5)
        #expect(log.capacity == 0)
        #expect(try Self.contents(of: log) == Array("abcde".utf8))
    }

    /// The copies into the mapping are in the file at once (pread sees them), followed by the terminator and the
    /// reserved zeros; the reservation is a chunk, fallocated, so the file's size is the reservation.
    @Test(arguments: ["memfd", "file"])
    func mappedAppendsAreInTheFileFollowedByTheTerminator(kind: String) throws {
        let directory = TemporaryDirectory()
        let log = kind == "memfd" ? try LogFile.memory(name: "test-log") : try LogFile.open(path: directory.file("log"))
        log.mapAppends(terminator: Self.terminator)
        try log.append(Array("header".utf8))
        try log.append(Array("record".utf8))
        #expect(log.length == 12)
        #expect(log.capacity == LogFile.chunk)
        let bytes = try Self.contents(of: log)
        #expect(bytes.count == LogFile.chunk)
        #expect(Array(bytes[..<12]) == Array("headerrecord".utf8))
        #expect(Array(bytes[12..<20]) == Self.terminator)
        #expect(bytes[20...].allSatisfy { $0 == 0 })
        var status = stat()
        #expect(fstat(log.descriptor.rawValue, &status) == 0)
        #expect(Int(status.st_blocks) * 512 >= LogFile.chunk, "the reservation is allocated, not a hole")
    }

    /// Past a chunk, the reservation doubles, up to the growth limit; past that, only what an append needs.
    @Test func theReservationDoublesUpToItsLimitThenGrowsByWhatIsNeeded() throws {
        let log = try LogFile.memory(name: "test-log")
        log.mapAppends(terminator: Self.terminator)
        log.growthLimit = 3 * LogFile.chunk
        let record = [UInt8](repeating: 7, count: 1000)
        var written: [UInt8] = []
        var capacities: [Int] = []
        for _ in 0..<260 {
            try log.append(record)
            written += record
            if capacities.last != log.capacity { capacities.append(log.capacity) }
        }
        #expect(capacities.first == LogFile.chunk)
        #expect(capacities.dropFirst().first == 2 * LogFile.chunk)
        #expect(capacities.contains(3 * LogFile.chunk))
        #expect(capacities.last! < written.count + 8 + 4096, "past the limit, a page at a time: \(capacities)")
        let bytes = try Self.contents(of: log)
        #expect(Array(bytes[..<written.count]) == written)
        #expect(Array(bytes[written.count..<(written.count + 8)]) == Self.terminator)
    }

    /// When the space cannot be reserved (here /dev/null, which takes writes but not fallocate: ENODEV, as a full
    /// tmpfs gives ENOSPC), the append is a `pwrite`, the log says why once, and later appends stay `pwrite`s.
    @Test func anAppendWhoseSpaceCannotBeReservedIsAPwriteAndSaysWhyOnce() throws {
        let log = try LogFile.open(path: "/dev/null", create: false)
        log.mapAppends(terminator: Self.terminator)
        try log.append(Array("header".utf8))
        #expect(log.length == 6)
        #expect(log.capacity == 0)
        let failure = try #require(log.takeMappingFailure())
        #expect(failure.errno == Errno(rawValue: ENODEV))
        #expect(log.takeMappingFailure() == nil)
        try log.append(Array("record".utf8))
        #expect(log.length == 12)
        #expect(log.takeMappingFailure() == nil)
    }

    /// Another process truncates the file under the mapping: the next store would raise SIGBUS. It is caught,
    /// the append goes on with pwrite, and the log says the file was cut short (its owner then writes it again).
    @Test(arguments: ["memfd", "file"])
    func aFileCutShortUnderTheMappingIsAnAppendByPwriteNotASIGBUS(kind: String) throws {
        let directory = TemporaryDirectory()
        let log = kind == "memfd" ? try LogFile.memory(name: "test-log") : try LogFile.open(path: directory.file("log"))
        log.mapAppends(terminator: Self.terminator)
        try log.append(Array("header".utf8))
        #expect(log.capacity == LogFile.chunk)
        #expect(!log.cutShort)
        // What another process does, through a descriptor of its own.
        let other = dup(log.descriptor.rawValue)
        #expect(ftruncate(other, 0) == 0)
        close(other)
        try log.append(Array("record".utf8))
        #expect(log.cutShort)
        #expect(log.capacity == 0, "back to pwrite")
        let failure = try #require(log.takeMappingFailure())
        #expect(failure.errno == Errno(rawValue: EFAULT))
        // The record is where the log said it would be; what the cut took is zeros now.
        let bytes = try Self.contents(of: log)
        #expect(bytes.count == 12)
        #expect(Array(bytes[6...]) == Array("record".utf8))
        #expect(bytes[..<6].allSatisfy { $0 == 0 })
    }

    @Test func allocateExtendsTheFileAndMapSharedWritesIntoIt() throws {
        let log = try LogFile.memory(name: "test-log")
        try log.descriptor.allocate(offset: 0, length: 8192)
        let mapping = try log.descriptor.mapShared(length: 8192)
        mapping[4096] = 42
        FileDescriptor.unmap(mapping)
        let bytes = try Self.contents(of: log)
        #expect(bytes.count == 8192)
        #expect(bytes[4096] == 42)
    }

    @Test func mappingADescriptorThatCannotBeMappedThrows() throws {
        let pair = try UnixSocket.pair()
        #expect(throws: SystemError.self) { _ = try pair.first.mapShared(length: 4096) }
        #expect(throws: SystemError.self) { try pair.first.allocate(offset: 0, length: 4096) }
    }
}
