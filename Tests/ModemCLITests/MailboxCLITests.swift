import Foundation
import Testing
import ModemTestSupport
import ProcessTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// `modem mailbox` between two `modem` processes over TCP on 127.0.0.1: the seed-000 mailbox
/// scenarios of issue 10 (chunks both ways in order, quit reasons, a killed peer, an untrusted key,
/// chunks queued before the session opened) and its usage errors. Listeners take port 0 and name
/// the port they got; every wait is for an event (a line, a file's lines, an exit), bounded by a
/// hang guard far above the expected time. The cases about real-time figures are in
/// ``MailboxRealTimeTests``.
@Suite("modem mailbox CLI", .serialized)
struct MailboxCLITests {
    /// Two keys folders that trust each other (alice in `a`, bob in `b`), and one trusting nobody.
    struct Keys {
        let a: String
        let b: String
        let stranger: String
    }

    static func makeKeys(_ dir: Scratch) async throws -> Keys {
        let keys = Keys(a: dir.file("keys-a"), b: dir.file("keys-b"), stranger: dir.file("keys-c"))
        var texts: [String] = []
        for folder in [keys.a, keys.b, keys.stranger] {
            let shown = try await modem(["keys", "show", "--keys", folder])
            #expect(shown.succeeded, "\(shown)")
            guard let key = shown.stdoutText.split(separator: "\n").last.map(String.init) else {
                throw HarnessError("keys show printed nothing")
            }
            texts.append(key)
        }
        let t1 = try await modem(["keys", "trust", "bob", texts[1], "--keys", keys.a])
        let t2 = try await modem(["keys", "trust", "alice", texts[0], "--keys", keys.b])
        #expect(t1.succeeded && t2.succeeded, "\(t1) \(t2)")
        return keys
    }

    /// Runs `script` (after ``Bash/prelude``) with bash; a `wait_for` that timed out is recorded
    /// as an issue naming what it waited for.
    static func bash(_ script: String, timeout: Double = 100,
                     sourceLocation: SourceLocation = #_sourceLocation) async throws -> ProcessResult {
        let run = try await runProcess("/bin/bash", ["-c", Bash.prelude + script], timeout: timeout)
        #expect(!run.stderrText.contains("timed out waiting for") && !run.timedOut, "\(run)", sourceLocation: sourceLocation)
        return run
    }

    @Test("100 chunks each way arrive in order; the side whose input ends reports END_USER_QUIT, the other END_OTHER_USER_QUIT",
          .timeLimit(.minutes(2)))
    func hundredEachWay() async throws {
        let dir = try Scratch("MailboxCLITests")
        let keys = try await Self.makeKeys(dir)
        let modemPath = try Paths.modem()
        try dir.write("a.in", (1...100).map { "from alice \($0)\n" }.joined())
        try dir.write("b.in", (1...100).map { "from bob \($0)\n" }.joined())
        // The check's own shape: alice's input stays open past the end of the session; bob's ends after
        // his 100 lines once the session has done its work both ways (alice's 100 chunks in b.out and
        // confirmed in a.err, bob's 100 in a.out), so bob quits and alice is told he did.
        let script = """
        cd '\(dir.path)'
        { cat a.in; wait_for "the end of alice's session" ended a.err; } | timeout 60 '\(modemPath)' mailbox --listen tcp:127.0.0.1:0 --name alice --keys '\(keys.a)' --keepalive 2 > a.out 2> a.err & ap=$!
        wait_for "alice's listening line" has_port a.err
        port=$(listen_port a.err)
        { cat b.in; wait_for "both sides' 100 chunks delivered and confirmed" eval 'ended b.err || { has_lines b.out . 100 && has_lines a.out . 100 && has_lines a.err "^sent " 100 && has_lines b.err "^sent " 100; }'; } | timeout 60 '\(modemPath)' mailbox --to tcp:127.0.0.1:$port --name bob --keys '\(keys.b)' --keepalive 2 > b.out 2> b.err & bp=$!
        wait $bp; brc=$?
        wait $ap; arc=$?
        touch release; wait
        echo "$arc $brc"
        """
        let run = try await Self.bash(script)
        let codes = run.stdoutText.split(whereSeparator: \.isWhitespace).compactMap { Int($0) }
        let aErr = (try? String(contentsOfFile: dir.file("a.err"), encoding: .utf8)) ?? ""
        let bErr = (try? String(contentsOfFile: dir.file("b.err"), encoding: .utf8)) ?? ""
        #expect(codes == [0, 0], "exit codes \(codes); alice:\n\(aErr)\nbob:\n\(bErr)")
        #expect(try readBytes(dir.file("a.out")) == readBytes(dir.file("b.in")), "alice's output differs from bob's input")
        #expect(try readBytes(dir.file("b.out")) == readBytes(dir.file("a.in")), "bob's output differs from alice's input")
        #expect(bErr.contains("disconnected END_USER_QUIT"), "\(bErr)")
        #expect(aErr.contains("disconnected END_OTHER_USER_QUIT"), "\(aErr)")
        #expect(aErr.contains("connected to bob") && bErr.contains("connected to alice"))
        // One "sent N" per chunk, in order, on each side.
        for err in [aErr, bErr] {
            let sent = err.split(separator: "\n").filter { $0.hasPrefix("sent ") }.map { Int($0.dropFirst(5)) ?? -1 }
            #expect(sent == Array(1...100), "\(err.prefix(400))")
        }
    }

    @Test("an untrusted key fails with FAIL_INVALID_AUTHORIZATION before any chunk (exit 3); the listener logs it and keeps serving: the trusted peer then gets its session",
          .timeLimit(.minutes(2)))
    func untrustedKey() async throws {
        let dir = try Scratch("MailboxCLITests")
        let keys = try await Self.makeKeys(dir)
        let modemPath = try Paths.modem()
        try dir.write("a.in", "secret from alice\n")
        try dir.write("b.in", "hello from bob\n")
        try dir.write("c.in", "secret from the stranger\n")
        let script = """
        cd '\(dir.path)'
        timeout 60 '\(modemPath)' mailbox --listen tcp:127.0.0.1:0 --name alice --keys '\(keys.a)' < a.in > a.out 2> a.err & ap=$!
        wait_for "alice's listening line" has_port a.err
        timeout 60 '\(modemPath)' mailbox --to tcp:127.0.0.1:$(listen_port a.err) --name mallory --keys '\(keys.stranger)' < c.in > c.out 2> c.err; crc=$?
        wait_for "alice's log of the stranger's failed handshake" grep -q 'failed its handshake' a.err
        timeout 60 '\(modemPath)' mailbox --to tcp:127.0.0.1:$(listen_port a.err) --name bob --keys '\(keys.b)' < b.in > b.out 2> b.err; brc=$?
        wait $ap; arc=$?
        echo "$arc $crc $brc"
        """
        let run = try await Self.bash(script)
        let codes = run.stdoutText.split(whereSeparator: \.isWhitespace).compactMap { Int($0) }
        let aErr = (try? String(contentsOfFile: dir.file("a.err"), encoding: .utf8)) ?? ""
        let cErr = (try? String(contentsOfFile: dir.file("c.err"), encoding: .utf8)) ?? ""
        #expect(codes == [0, 3, 0], "exit codes alice, stranger, bob: \(codes); alice:\n\(aErr)\nstranger:\n\(cErr)")
        #expect(cErr.contains("connect failed FAIL_INVALID_AUTHORIZATION"), "\(cErr)")
        #expect(aErr.contains("failed its handshake (FAIL_INVALID_AUTHORIZATION"), "\(aErr)")
        #expect(try readBytes(dir.file("c.out")).isEmpty)
        #expect(!cErr.contains("connected to"))
        // The stranger saw nothing of alice's; bob and alice had their session.
        #expect(aErr.contains("connected to bob"), "\(aErr)")
        #expect(String(decoding: try readBytes(dir.file("a.out")), as: UTF8.self).contains("hello from bob"))
        #expect(String(decoding: try readBytes(dir.file("b.out")), as: UTF8.self).contains("secret from alice"))
    }

    @Test("stray connections (silence; the magic and then silence; the magic and then junk; HTTP) neither end nor hold the listener, each failure is logged for what it is, and the real peer gets its session",
          .timeLimit(.minutes(2)))
    func strayConnections() async throws {
        let dir = try Scratch("MailboxCLITests")
        let keys = try await Self.makeKeys(dir)
        let modemPath = try Paths.modem()
        try dir.write("a.in", "secret from alice\n")
        try dir.write("b.in", "hello from bob\n")
        let script = """
        cd '\(dir.path)'
        timeout 60 '\(modemPath)' mailbox --listen tcp:127.0.0.1:0 --name alice --keys '\(keys.a)' < a.in > a.out 2> a.err & ap=$!
        wait_for "alice's listening line" has_port a.err
        port=$(listen_port a.err)
        exec 5<>/dev/tcp/127.0.0.1/$port
        exec 3<>/dev/tcp/127.0.0.1/$port; printf 'SMsg' >&3
        exec 4<>/dev/tcp/127.0.0.1/$port; printf 'SMsg\\377\\377\\377\\377\\377\\377' >&4
        exec 6<>/dev/tcp/127.0.0.1/$port; printf 'GET / HTTP/1.1\\r\\n\\r\\n' >&6
        wait_for "alice's log of the junk's failed handshake" grep -q 'a frame of' a.err
        wait_for "alice's log of the HTTP request's failed handshake" grep -q 'not a SwiftModem session' a.err
        timeout 60 '\(modemPath)' mailbox --to tcp:127.0.0.1:$port --name bob --keys '\(keys.b)' < b.in > b.out 2> b.err; brc=$?
        wait $ap; arc=$?
        exec 3>&- 4>&- 5>&- 6>&-
        echo "$arc $brc"
        """
        let run = try await Self.bash(script)
        let codes = run.stdoutText.split(whereSeparator: \.isWhitespace).compactMap { Int($0) }
        let aErr = (try? String(contentsOfFile: dir.file("a.err"), encoding: .utf8)) ?? ""
        #expect(codes == [0, 0], "exit codes alice, bob: \(codes); alice:\n\(aErr)\n\(run.stderrText)")
        #expect(aErr.contains("failed its handshake") && aErr.contains("still listening"), "\(aErr)")
        #expect(aErr.contains("the peer broke the session protocol: a frame of"), "\(aErr)")
        #expect(aErr.contains("the peer broke the session protocol: not a SwiftModem session"), "\(aErr)")
        #expect(aErr.contains("connected to bob"), "\(aErr)")
        #expect(String(decoding: try readBytes(dir.file("a.out")), as: UTF8.self).contains("hello from bob"))
    }

    @Test("inputs that ended before the session opened are still delivered; no --name; both exit 0",
          .timeLimit(.minutes(2)))
    func queuedBeforeConnect() async throws {
        let dir = try Scratch("MailboxCLITests")
        let keys = try await Self.makeKeys(dir)
        let modemPath = try Paths.modem()
        let script = """
        cd '\(dir.path)'
        echo hi | timeout 60 '\(modemPath)' mailbox --listen tcp:127.0.0.1:0 --keys '\(keys.a)' > m.a 2>&1 & mp=$!
        wait_for "the listener's listening line" has_port m.a
        echo yo | timeout 60 '\(modemPath)' mailbox --to tcp:127.0.0.1:$(listen_port m.a) --keys '\(keys.b)' > m.b 2>&1; mrc=$?
        wait $mp; arc=$?
        echo "$arc $mrc"
        """
        let run = try await Self.bash(script)
        let codes = run.stdoutText.split(whereSeparator: \.isWhitespace).compactMap { Int($0) }
        let a = (try? String(contentsOfFile: dir.file("m.a"), encoding: .utf8)) ?? ""
        let b = (try? String(contentsOfFile: dir.file("m.b"), encoding: .utf8)) ?? ""
        #expect(codes == [0, 0], "exit codes \(codes); listener:\n\(a)\ndialer:\n\(b)")
        #expect(b.split(separator: "\n").contains("hi"), "\(b)")
        #expect(a.split(separator: "\n").contains("yo"), "\(a)")
    }

    @Test("usage errors exit 64 naming the problem; a bad --contact is FAIL_BAD_CONTACT, exit 1; nobody listening, exit 3")
    func usage() async throws {
        let dir = try Scratch("MailboxCLITests")
        let none = try await modem(["mailbox"])
        #expect(none.status == 64 && none.stderrText.contains("--listen"), "\(none)")
        let both = try await modem(["mailbox", "--listen", "tcp:127.0.0.1:1", "--to", "tcp:127.0.0.1:2"])
        #expect(both.status == 64, "\(both)")
        let badEndpoint = try await modem(["mailbox", "--to", "carrier-pigeon:7"])
        #expect(badEndpoint.status == 64 && badEndpoint.stderrText.contains("--to"), "\(badEndpoint)")
        let badKeepalive = try await modem(["mailbox", "--to", "tcp:127.0.0.1:2", "--keepalive", "0"])
        #expect(badKeepalive.status == 64 && badKeepalive.stderrText.contains("--keepalive"), "\(badKeepalive)")
        // Durations no timer can hold, and negative ones: the same range check where they are parsed (they
        // used to crash once a peer connected), and a negative value is the option's, not a missing one.
        for (option, value) in [("--keepalive", "1e16"), ("--keepalive", "1e300"), ("--keepalive", "-1"), ("--keepalive", "nan"),
                                ("--max-seconds", "1e20"), ("--max-seconds", "-5"), ("--max-seconds", "inf")] {
            let r = try await modem(["mailbox", "--to", "tcp:127.0.0.1:2", option, value])
            #expect(r.status == 64 && r.stderrText.contains("\(option) must be") && r.stderrText.contains("seconds"),
                    "\(option) \(value): \(r)")
        }
        let card = try dir.write("bad.vcf", "BEGIN:VCARD\r\nVERSION:3.0\r\nFN:Old\r\nEND:VCARD\r\n")
        let badContact = try await modem(["mailbox", "--to", "tcp:127.0.0.1:1", "--contact", card, "--keys", dir.file("k")])
        #expect(badContact.status == 1, "\(badContact)")
        #expect(badContact.stderrText.contains("connect failed FAIL_BAD_CONTACT") && badContact.stderrText.contains("4.0"),
                "\(badContact)")
        // Nothing listens on the port: FAIL_NETWORK_UNAVAILABLE, exit 3.
        // The port is bound (no other process can take it) but not listening: every connection is refused.
        let closed = try TCPRefusingPort()
        defer { closed.close() }
        let refused = try await modem(["mailbox", "--to", "tcp:127.0.0.1:\(closed.port)", "--keys", dir.file("k")], timeout: 60)
        #expect(refused.status == 3 && refused.stderrText.contains("connect failed FAIL_NETWORK_UNAVAILABLE"), "\(refused)")
    }

    @Test("contact cards are exchanged and shown; the byte limit ends the session with END_USER_QUIT and its detail",
          .timeLimit(.minutes(2)))
    func contactAndLimit() async throws {
        let dir = try Scratch("MailboxCLITests")
        let keys = try await Self.makeKeys(dir)
        let modemPath = try Paths.modem()
        try dir.write("alice.vcf", "BEGIN:VCARD\r\nVERSION:4.0\r\nFN:Alice Example\r\nEMAIL:alice@example.org\r\nEND:VCARD\r\n")
        try dir.write("a.in", (1...50).map { "line \($0) from alice" }.joined(separator: "\n") + "\n")
        // Both inputs stay open until the session ended (the byte limit ends it, not an input).
        let script = """
        cd '\(dir.path)'
        { cat a.in; wait_for "the end of alice's session" ended a.err; } | timeout 60 '\(modemPath)' mailbox --listen tcp:127.0.0.1:0 --name alice --keys '\(keys.a)' --contact alice.vcf --max-bytes 100 > a.out 2> a.err & ap=$!
        wait_for "alice's listening line" has_port a.err
        wait_for "the end of bob's session" ended b.err | timeout 60 '\(modemPath)' mailbox --to tcp:127.0.0.1:$(listen_port a.err) --name bob --keys '\(keys.b)' --max-bytes 100000 > b.out 2> b.err & bp=$!
        wait $bp; brc=$?
        wait $ap; arc=$?
        touch release; wait
        echo "$arc $brc"
        """
        let run = try await Self.bash(script)
        let codes = run.stdoutText.split(whereSeparator: \.isWhitespace).compactMap { Int($0) }
        let aErr = (try? String(contentsOfFile: dir.file("a.err"), encoding: .utf8)) ?? ""
        let bErr = (try? String(contentsOfFile: dir.file("b.err"), encoding: .utf8)) ?? ""
        #expect(codes == [0, 0], "exit codes \(codes); alice:\n\(aErr)\nbob:\n\(bErr)")
        #expect(bErr.contains("contact Alice Example"), "\(bErr)")
        #expect(aErr.contains("disconnected END_USER_QUIT: the session limit of 100 bytes was reached"), "\(aErr)")
        #expect(bErr.contains("disconnected END_OTHER_USER_QUIT"), "\(bErr)")
        // Only whole chunks within the limit went out: 100 bytes hold 5 lines of 18-19 bytes.
        let got = (try? String(contentsOfFile: dir.file("b.out"), encoding: .utf8)) ?? ""
        #expect(got == (1...5).map { "line \($0) from alice\n" }.joined(), "\(got)")
    }

    @Test("SIGINT before a peer came is FAIL_USER_CANCELED (exit 130); after, END_USER_QUIT (exit 0) and the peer END_OTHER_USER_QUIT",
          .timeLimit(.minutes(2)))
    func interrupt() async throws {
        let dir = try Scratch("MailboxCLITests")
        let keys = try await Self.makeKeys(dir)
        let modemPath = try Paths.modem()
        let lonely = try await TNCBackgroundProcess(modemPath, ["mailbox", "--listen", "tcp:127.0.0.1:0",
                                                          "--keys", keys.a], in: dir, name: "lonely", stdinPipe: true)
        defer { lonely.kill() }
        // It prints the port once it listens, after its SIGINT handler is in place: no peer has come.
        _ = try await lonely.messagingPort()
        lonely.signal(SIGINT)
        #expect(await lonely.wait(timeout: 30), "still running 30 s after SIGINT: \(lonely.stderrText)")
        #expect(lonely.status == 130 && lonely.stderrText.contains("connect failed FAIL_USER_CANCELED"), "\(lonely.status) \(lonely.stderrText)")

        let alice = try await TNCBackgroundProcess(modemPath, ["mailbox", "--listen", "tcp:127.0.0.1:0", "--name", "alice",
                                                         "--keys", keys.a], in: dir, name: "alice", stdinPipe: true)
        defer { alice.kill() }
        let port = try await alice.messagingPort()
        let bob = try await TNCBackgroundProcess(modemPath, ["mailbox", "--to", "tcp:127.0.0.1:\(port)", "--name", "bob",
                                                       "--keys", keys.b], in: dir, name: "bob", stdinPipe: true)
        defer { bob.kill() }
        try await bob.awaitStderr("'connected to alice'") { $0.contains("connected to alice") }
        bob.signal(SIGINT)
        #expect(await bob.wait(timeout: 30), "still running 30 s after SIGINT: \(bob.stderrText)")
        #expect(await alice.wait(timeout: 30), "alice still running 30 s after bob's SIGINT: \(alice.stderrText)")
        #expect(bob.status == 0 && bob.stderrText.contains("disconnected END_USER_QUIT"), "\(bob.status) \(bob.stderrText)")
        #expect(alice.status == 0 && alice.stderrText.contains("disconnected END_OTHER_USER_QUIT"), "\(alice.status) \(alice.stderrText)")
    }
}

/// The mailbox cases whose point is a real-time figure: how soon a killed peer and a cut line are
/// reported. scripts/test.sh runs the `RealTimeTests` suites in a group of their own, one at a
/// time, so they do not share the cores with other tests; everything but the figure is
/// event-driven, and the bounds are generous.
@Suite("modem mailbox CLI (real time)", .serialized)
struct MailboxRealTimeTests {
    @Test("a peer whose output is blocked stalls the sender: its sends stop and its memory stays under 64 MiB (real time)",
          .timeLimit(.minutes(2)))
    func blockedReader() async throws {
        let dir = try Scratch("MailboxCLITests")
        let keys = try await MailboxCLITests.makeKeys(dir)
        let modemPath = try Paths.modem()
        // Alice has 100 MB to send; bob's standard output is a FIFO that nobody reads (the reader only
        // holds it open), his input stays open. Once bob is connected, alice's count of confirmed
        // chunks must come to a stop: it is read when it has not moved for 2 s (polled), then again
        // 2 s later. A stop seen too early can only make the second reading differ, never hide a
        // sender that goes on. "Stopped" is judged by the clock, so this lives with the real-time tests.
        let script = """
        cd '\(dir.path)'
        mkfifo out.fifo
        wait_for "the end of the script (the FIFO's reader)" test -e release < out.fifo & rp=$!
        line=$(printf 'x%.0s' $(seq 1 1000))
        yes "$line" | head -n 100000 | '\(modemPath)' mailbox --listen tcp:127.0.0.1:0 --name alice --keys '\(keys.a)' > /dev/null 2> a.err & ap=$!
        wait_for "alice's listening line" has_port a.err
        wait_for "the end of the script (bob's input)" test -e release | '\(modemPath)' mailbox --to tcp:127.0.0.1:$(listen_port a.err) --name bob --keys '\(keys.b)' > out.fifo 2> b.err & bp=$!
        wait_for "'connected to bob'" grep -q 'connected to bob' a.err
        sent() { grep -c '^sent ' a.err; }
        last=$(sent); still=0; n=0
        while [ "$still" -lt 20 ] && [ "$n" -lt 600 ]; do
          sleep 0.1; n=$((n + 1)); now=$(sent)
          if [ "$now" = "$last" ]; then still=$((still + 1)); else still=0; last=$now; fi
        done
        [ "$still" -ge 20 ] || echo "timed out waiting for alice's sends to stop (60 s)" >&2
        s1=$(sent); r1=$(awk '/VmRSS/ {print $2}' /proc/$ap/status)
        sleep 2
        s2=$(sent); r2=$(awk '/VmRSS/ {print $2}' /proc/$ap/status)
        kill $ap $bp 2>/dev/null
        touch release; wait
        echo "$s1 $s2 $r1 $r2"
        """
        let run = try await MailboxCLITests.bash(script)
        let numbers = run.stdoutText.split(whereSeparator: \.isWhitespace).compactMap { Int($0) }
        let aErr = (try? String(contentsOfFile: dir.file("a.err"), encoding: .utf8)) ?? ""
        try #require(numbers.count == 4, "\(run) alice: \(aErr.prefix(300))")
        let (sent1, sent2, rss1, rss2) = (numbers[0], numbers[1], numbers[2], numbers[3])
        #expect(aErr.contains("connected to bob"), "\(aErr.prefix(300))")
        #expect(sent1 > 0 && sent1 < 400, "alice's chunks held by bob: \(sent1)")
        #expect(sent2 == sent1, "sends went on while bob could not write: \(sent1) then \(sent2)")
        #expect(max(rss1, rss2) < 65_536, "alice's resident memory: \(rss1) then \(rss2) KiB")
    }

    @Test("a peer killed with SIGKILL is reported as END_OTHER_USER_LOST within keepalive + 2 s, exit 4 (real time)",
          .timeLimit(.minutes(2)))
    func killedPeer() async throws {
        let dir = try Scratch("MailboxCLITests")
        let keys = try await MailboxCLITests.makeKeys(dir)
        let modemPath = try Paths.modem()
        let alice = try await TNCBackgroundProcess(modemPath, ["mailbox", "--listen", "tcp:127.0.0.1:0", "--name", "alice",
                                                         "--keys", keys.a, "--keepalive", "2"], in: dir, name: "alice", stdinPipe: true)
        defer { alice.kill() }
        let port = try await alice.messagingPort()
        let bob = try await TNCBackgroundProcess(modemPath, ["mailbox", "--to", "tcp:127.0.0.1:\(port)", "--name", "bob",
                                                       "--keys", keys.b, "--keepalive", "2"], in: dir, name: "bob", stdinPipe: true)
        defer { bob.kill() }
        try await alice.awaitStderr("'connected to bob'") { $0.contains("connected to bob") }
        try await bob.awaitStderr("'connected to alice'") { $0.contains("connected to alice") }
        bob.signal(SIGKILL)
        let killed = Date()
        // The wait is a hang guard; the real-time figure is the time measured to the report.
        let reported = await alice.waitForStderr(timeout: 30) { $0.contains("END_OTHER_USER_LOST") }
        let after = Date().timeIntervalSince(killed)
        #expect(reported, "alice did not report the lost peer within 30 s: \(alice.stderrText)")
        #expect(after <= 4.0, "reported after \(after) s (keepalive 2 s + 2 s allowed)")
        #expect(await alice.wait(timeout: 30), "alice still running 30 s after the lost peer: \(alice.stderrText)")
        #expect(alice.exitedNormally && alice.status == 4, "alice exit \(alice.status): \(alice.stderrText)")
    }

    /// A TCP relay on a port of its own choosing (named in its line `ready PORT`) to the port of its
    /// first argument, that forwards until a file named by its second argument appears, then holds both
    /// connections open and silent (a cut line, not a closed one). A file, not a signal: the test
    /// runner's threads may block signals, and a spawned child inherits that mask.
    static let relayScript = """
    import os, select, socket, sys
    target_port, cut_file = int(sys.argv[1]), sys.argv[2]
    server = socket.socket()
    server.bind(("127.0.0.1", 0)); server.listen(1)
    print("ready %d" % server.getsockname()[1], flush=True)
    a, _ = server.accept()
    b = socket.create_connection(("127.0.0.1", target_port))
    peers = {a: b, b: a}
    while not os.path.exists(cut_file):
        readable, _, _ = select.select([a, b], [], [], 0.05)
        for s in readable:
            data = s.recv(65536)
            if not data:
                sys.exit(0)
            peers[s].sendall(data)
    print("cut", flush=True)
    while True:
        select.select([], [], [], 1)
    """

    @Test("a cut line (silence, no close) is END_LOST_NET on both sides within twice the keepalive, exit 4 (real time)",
          .requires(Peers.python3), .timeLimit(.minutes(2)))
    func cutLine() async throws {
        let dir = try Scratch("MailboxCLITests")
        let keys = try await MailboxCLITests.makeKeys(dir)
        let modemPath = try Paths.modem()
        let relayFile = try dir.write("relay.py", Self.relayScript)
        let alice = try await TNCBackgroundProcess(modemPath, ["mailbox", "--listen", "tcp:127.0.0.1:0", "--name", "alice",
                                                         "--keys", keys.a, "--keepalive", "1"], in: dir, name: "alice", stdinPipe: true)
        defer { alice.kill() }
        let port = try await alice.messagingPort()
        let relay = try await TNCBackgroundProcess(try Peers.python3.path(), [relayFile, String(port), dir.file("cut")],
                                             in: dir, name: "relay")
        defer { relay.kill() }
        var relayPort: Int?
        try await relay.awaitStdout("'ready PORT' from the relay") { text in
            guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("ready ") }) else { return false }
            relayPort = Int(line.dropFirst("ready ".count))
            return relayPort != nil
        }
        let bob = try await TNCBackgroundProcess(modemPath, ["mailbox", "--to", "tcp:127.0.0.1:\(relayPort!)", "--name", "bob",
                                                       "--keys", keys.b, "--keepalive", "1"], in: dir, name: "bob", stdinPipe: true)
        defer { bob.kill() }
        try await alice.awaitStderr("'connected to bob'") { $0.contains("connected to bob") }
        bob.writeStdin("through the relay\n")
        try await bob.awaitStderr("'sent 1'") { $0.contains("sent 1") }
        try dir.write("cut", "now")
        let cut = Date()
        // The waits are hang guards; the real-time figure is the time measured to both reports.
        #expect(await alice.waitForStderr(timeout: 30) { $0.contains("disconnected END_LOST_NET") },
                "alice did not report END_LOST_NET within 30 s: \(alice.stderrText)")
        #expect(await bob.waitForStderr(timeout: 30) { $0.contains("disconnected END_LOST_NET") },
                "bob did not report END_LOST_NET within 30 s: \(bob.stderrText)")
        let after = Date().timeIntervalSince(cut)
        #expect(after <= 5, "the cut was reported after \(after) s (keepalive 1 s: lost after 2 s of silence; 5 s allowed)")
        let aliceExited = await alice.wait(timeout: 30)
        let bobExited = await bob.wait(timeout: 30)
        #expect(aliceExited && bobExited, "still running 30 s after END_LOST_NET: alice \(aliceExited ? "exited" : "runs"), bob \(bobExited ? "exited" : "runs")")
        #expect(alice.status == 4 && bob.status == 4, "exit \(alice.status) \(bob.status)")
        #expect(alice.stdoutText == "through the relay\n")
    }
}
