import Foundation
import ModemTestSupport
import ProcessTestSupport
import Testing

/// `modem ax25 connect` and `modem ax25 listen` as processes, talking through a KISS "ether"
/// (Tests/scripts/kiss_ether.py: every byte a client sends reaches the others, as on a shared channel).
/// Waits are for events (the ether's port, the listener's line, the processes' exits); the time limits
/// are hang guards.
@Suite("modem ax25 (CLI)")
struct AX25CLITests {
    /// Runs `body` with a KISS ether started, given its port.
    static func withEther(_ body: (Int) async throws -> Void) async throws {
        let dir = try Scratch("AX25Ether")
        let ether = try await TNCBackgroundProcess(try Peers.python3.path(), [Peer.packageRoot + "/Tests/scripts/kiss_ether.py"],
                                                   in: dir, name: "kiss ether", stdinPipe: true)
        defer { ether.kill() }
        let port = try await ether.announcedNumber(after: "kiss ether on ", on: .stdout)
        try await body(port)
        ether.closeStdin()
    }

    @Test("a file goes to the listener byte for byte and the listener's file back; connect closes at the end of its input, listen ends with it",
          .requires(Peers.python3), .timeLimit(.minutes(2)))
    func fileBothWays() async throws {
        try await Self.withEther { port in
            let dir = try Scratch("AX25Files")
            var ra = TestRandom(seed: 25), rb = TestRandom(seed: 26)
            let a = ra.bytes(20_000), b = rb.bytes(3_000)
            let aPath = try dir.write("a.bin", a), bPath = try dir.write("b.bin", b)
            let listener = try await TNCBackgroundProcess("/bin/sh", ["-c", "exec \"$0\" ax25 listen --mycall N0CALL-2 --kiss 127.0.0.1:\(port) --binary --baud 9600 < \"$1\"",
                                                                      try Paths.modem(), bPath], in: dir, name: "listen")
            defer { listener.kill() }
            try await listener.awaitStderr("listening") { $0.contains("listening as N0CALL-2") }
            let caller = try await modem(["ax25", "connect", "N0CALL-2", "--mycall", "N0CALL", "--kiss", "127.0.0.1:\(port)", "--binary", "--baud", "9600"],
                                         stdinFile: aPath, timeout: 60)
            try await listener.awaitExit("listen to end", timeout: 60)
            #expect(caller.succeeded, "\(caller)")
            #expect(listener.status == 0, "\(listener.stderrText)")
            #expect(listener.stdout == a)
            // The listener's reply arrives in order as far as it was sent before the caller closed.
            #expect(!caller.stdout.isEmpty && b.starts(with: caller.stdout))
            #expect(caller.stderrText.contains("connected to N0CALL-2, AX.25 2.2, modulo 128"))
            #expect(listener.stderrText.contains("connected to N0CALL (incoming)"))
        }
    }

    @Test("text typed with LF arrives with CR on the air and is shown with LF; a 2.0 connection (--v20) works too",
          .requires(Peers.python3), .timeLimit(.minutes(2)))
    func textV20() async throws {
        try await Self.withEther { port in
            let dir = try Scratch("AX25Text")
            let text = "hello there\nsecond line\n"
            let path = try dir.write("t.txt", Array(text.utf8))
            let listener = try await TNCBackgroundProcess(try Paths.modem(), ["ax25", "listen", "--mycall", "N0CALL-2", "--kiss", "127.0.0.1:\(port)"],
                                                          in: dir, name: "listen")
            defer { listener.kill() }
            try await listener.awaitStderr("listening") { $0.contains("listening as N0CALL-2") }
            let caller = try await modem(["ax25", "connect", "N0CALL-2", "--mycall", "N0CALL", "--kiss", "127.0.0.1:\(port)", "--v20"],
                                         stdinFile: path, timeout: 60)
            try await listener.awaitExit("listen to end", timeout: 60)
            #expect(caller.succeeded, "\(caller)")
            #expect(caller.stderrText.contains("modulo 8"))
            #expect(listener.stdoutText == text)
        }
    }

    @Test("nobody answers: exit 3 after the retries, with the reason", .requires(Peers.python3), .timeLimit(.minutes(2)))
    func nobodyAnswers() async throws {
        try await Self.withEther { port in
            let r = try await modem(["ax25", "connect", "NOBODY", "--mycall", "N0CALL", "--kiss", "127.0.0.1:\(port)",
                                     "--retries", "2", "--frack", "0.5", "--baud", "1000000", "--txdelay", "0"], timeout: 60)
            #expect(r.status == 3, "\(r)")
            #expect(r.stderrText.contains("could not connect"))
        }
    }

    @Test("bad command lines and an unreachable TNC are refused with one line and their exit status")
    func refusals() async throws {
        for (args, status, text) in [
            (["ax25", "connect", "N0CALL-2", "--mycall", "N0CALL", "--kiss", "nope"], Int32(64), "--kiss nope is not HOST:PORT"),
            (["ax25", "connect", "N0CALL-2", "--mycall", "TOOLONGCALL", "--kiss", "127.0.0.1:1"], 64, "--mycall"),
            (["ax25", "connect", "N0CALL-2", "--mycall", "N0CALL", "--kiss", "127.0.0.1:1", "--window", "200"], 64, "--window 200"),
            (["ax25", "connect", "N0CALL-2", "--mycall", "N0CALL", "--kiss", "127.0.0.1:1", "--v20", "--window", "9"], 64, "--window 9"),
            (["ax25", "listen", "--mycall", "N0CALL", "--kiss", "127.0.0.1:1"], 3, "cannot reach the KISS TNC"),
        ] {
            let r = try await modem(args)
            #expect(r.status == status, "\(args): \(r)")
            #expect(r.stderrText.contains(text), "\(args): \(r.stderrText)")
        }
    }
}
