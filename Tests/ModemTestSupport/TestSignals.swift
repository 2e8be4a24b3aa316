import CTestSignals

/// Whether this test process ignores SIGPIPE (set when the bundle loads; see Tests/CTestSignals).
public var testProcessIgnoresSIGPIPE: Bool { swiftmodem_tests_sigpipe_ignored() == 1 }
