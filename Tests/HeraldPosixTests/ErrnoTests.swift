import HeraldPosix
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

@Suite struct ErrnoTests {
    @Test func describesItselfWithSystemTextAndNumber() {
        #if os(Linux)
        #expect(Errno.addressInUse.description == "Address already in use (errno 98)")
        #expect(Errno.noEntry.description == "No such file or directory (errno 2)")
        #else
        #expect(Errno.addressInUse.description == "Address already in use (errno \(EADDRINUSE))")
        #endif
    }

    @Test func describesUnknownNumbersWithoutCrashing() {
        #expect(Errno(rawValue: 9999).description.hasSuffix("(errno 9999)"))
    }

    @Test func systemErrorReadsAsASentence() {
        let error = SystemError(operation: "bind /run/user/1000/herald/socket", errno: .addressInUse)
        #if os(Linux)
        #expect(
            error.description == "cannot bind /run/user/1000/herald/socket: Address already in use (errno 98)"
        )
        #else
        #expect(error.description.hasPrefix("cannot bind /run/user/1000/herald/socket: Address already in use"))
        #endif
    }

    @Test func constantsMatchTheirErrnoNumbers() {
        #expect(Errno.wouldBlock.rawValue == EAGAIN)
        #expect(Errno.connectionRefused.rawValue == ECONNREFUSED)
        #expect(Errno.tooManyOpenFiles.rawValue == EMFILE)
        #expect(Errno.outOfFileTable.rawValue == ENFILE)
        #expect(Errno.brokenPipe.rawValue == EPIPE)
        #expect(Errno.permissionDenied.rawValue == EACCES)
        #expect(Errno.timedOut.rawValue == ETIMEDOUT)
    }
}
