import Foundation
import Testing
import ModemTestSupport
import ProcessTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Two `modem` processes with two key stores (Alice trusts Bob's key as `bob`, Bob Alice's as
/// `alice`), each announcing a name of its own choosing (issue 32, defect 12): what each prints names
/// the other by the name its key is trusted under, with the claimed name beside it as a claim only.
@Suite("modem: peers named by their trusted name", .serialized)
struct PeerNameCLITests {
    @Test("mailbox: Bob listening as --name the-boss is 'connected to bob (claims \"the-boss\")' at Alice, and Alice as root@vm is 'alice (claims ...)' at Bob",
          .timeLimit(.minutes(2)))
    func mailbox() async throws {
        let dir = try Scratch("PeerNameCLITests")
        let keys = try await MailboxCLITests.makeKeys(dir)
        let modemPath = try Paths.modem()
        try dir.write("a.in", "hello from alice\n")
        try dir.write("b.in", "hello from bob\n")
        let script = """
        cd '\(dir.path)'
        timeout 60 '\(modemPath)' mailbox --listen tcp:127.0.0.1:0 --name the-boss --keys '\(keys.b)' < b.in > b.out 2> b.err & bp=$!
        wait_for "bob's listening line" has_port b.err
        timeout 60 '\(modemPath)' mailbox --to tcp:127.0.0.1:$(listen_port b.err) --name root@vm --keys '\(keys.a)' < a.in > a.out 2> a.err; arc=$?
        wait $bp; brc=$?
        echo "$arc $brc"
        """
        let run = try await MailboxCLITests.bash(script)
        let codes = run.stdoutText.split(whereSeparator: \.isWhitespace).compactMap { Int($0) }
        let aErr = (try? String(contentsOfFile: dir.file("a.err"), encoding: .utf8)) ?? ""
        let bErr = (try? String(contentsOfFile: dir.file("b.err"), encoding: .utf8)) ?? ""
        #expect(codes == [0, 0], "exit codes alice, bob: \(codes); alice:\n\(aErr)\nbob:\n\(bErr)")
        let aliceLine = aErr.split(separator: "\n").first { $0.hasPrefix("connected to") }.map(String.init)
        let bobLine = bErr.split(separator: "\n").first { $0.hasPrefix("connected to") }.map(String.init)
        #expect(aliceLine == "connected to bob (claims \"the-boss\")", "\(aErr)")
        #expect(bobLine == "connected to alice (claims \"root@vm\")", "\(bErr)")
        #expect(String(decoding: try readBytes(dir.file("a.out")), as: UTF8.self).contains("hello from bob"))
    }

    @Test("send/receive: a file from Bob sending as --name the-boss is 'from bob' in the receiver's session line and its received line",
          .timeLimit(.minutes(2)))
    func sendReceive() async throws {
        let dir = try Scratch("PeerNameCLITests")
        let (ka, kb) = try await TransferCLITests.trustedKeys(dir)  // ka trusts kb as bob, kb trusts ka as alice
        let data = (0..<5000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        let source = try dir.write("doc.bin", data)
        let rx = try await TNCBackgroundProcess(try Paths.modem(), ["receive", "--listen", "tcp:127.0.0.1:0", "--dir", dir.file("in"),
                                                                   "--accept-all", "--keys", ka], in: dir, name: "rx")
        defer { rx.kill() }
        let port = try await rx.messagingPort()
        let send = try await modem(["send", "--to", "tcp:127.0.0.1:\(port)", source, "--keys", kb, "--name", "the-boss"], timeout: 60)
        #expect(send.succeeded, "\(send)\nreceiver: \(rx.stderrText)")
        #expect(send.stderrText.contains("modem send: session with alice"), "\(send.stderrText)")
        #expect(await rx.wait(timeout: 30), "receive did not exit within 30 s of the session: \(rx.stderrText)")
        #expect(rx.exitedNormally && rx.status == 0, "\(rx.stderrText)")
        #expect(rx.stderrText.contains("modem receive: session from bob (claims \"the-boss\")"), "\(rx.stderrText)")
        let received = rx.stdoutText.split(separator: "\n").first.map(String.init) ?? ""
        #expect(received.hasPrefix("received doc.bin 5000 sha256 ") && received.hasSuffix(" from bob"), "\(rx.stdoutText)")
        // The claimed name never stands alone as the sender.
        #expect(!rx.stdoutText.contains("the-boss") && !rx.stderrText.contains("from the-boss"), "\(rx.stdoutText)\n\(rx.stderrText)")
        #expect(try readBytes(dir.file("in/doc.bin")) == data)
    }
}
