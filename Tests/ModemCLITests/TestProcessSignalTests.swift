import ModemTestSupport
import ProcessTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The test process itself: writes into pipes whose readers are gone must fail with EPIPE, never
/// kill the run (signal 13 once ended a CI run in the middle of the modem group).
@Suite("The test process")
struct TestProcessSignalTests {
    @Test("SIGPIPE is ignored before any test runs, and a write into a pipe with no reader fails with EPIPE")
    func sigpipeIgnored() throws {
        #expect(testProcessIgnoresSIGPIPE)
        var current = sigaction()
        #expect(sigaction(SIGPIPE, nil, &current) == 0)
        #expect(unsafeBitCast(current.__sigaction_handler.sa_handler, to: Int.self) == unsafeBitCast(SIG_IGN, to: Int.self))
        var fds: [Int32] = [0, 0]
        try #require(pipe(&fds) == 0)
        close(fds[0])
        var byte: UInt8 = 1
        let n = write(fds[1], &byte, 1)
        let error = errno
        close(fds[1])
        #expect(n == -1 && error == EPIPE)
    }
}
