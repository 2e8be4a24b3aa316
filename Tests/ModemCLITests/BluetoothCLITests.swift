import Foundation
import ModemTestSupport
import ProcessTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Starts the Bumble peer (the tests that call this carry `.requires(BumblePeer.venv)`).
private func peer(_ arguments: [String]) async throws -> BumblePeer {
    try await BumblePeer.start(arguments)
}

private func randomBytes(_ count: Int, seed: UInt64) -> [UInt8] {
    var rng = TestRandom(seed: seed)
    return (0..<count).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
}

/// `modem bt` against Google's Bumble (a separate Python process: its controllers and host stack).
@Suite("modem bt against the Bumble peer", .serialized)
struct BluetoothCLITests {
    @Test("bt scan finds three devices with their names", .requires(BumblePeer.venv))
    func scan() async throws {
        let p = try await peer(["--extra-devices", "2"])
        defer { p.stop() }
        let r = try await modem(["bt", "scan", "--hci", "tcp:127.0.0.1:\(p.port)", "--seconds", "2"], timeout: 30)
        #expect(r.status == 0, "\(r)")
        let lines = r.stdoutText.split(separator: "\n").map(String.init)
        for (address, name) in [("00:1B:DC:00:00:0B", "Bumble Echo"), ("00:1B:DC:00:01:02", "Echo 2"), ("00:1B:DC:00:01:03", "Echo 3")] {
            #expect(lines.contains { $0.hasPrefix(address) && $0.hasSuffix(name) }, "\(address) \(name) in \(lines)")
        }
    }

    @Test("bt connect: 100 KB echoed byte-exact through SDP and RFCOMM, roomy and 27-byte x 2 ACL buffers", .requires(BumblePeer.venv), arguments: [[String](), ["--acl-mtu", "27", "--acl-count", "2"]])
    func echo(_ options: [String]) async throws {
        let p = try await peer(options)
        defer { p.stop() }
        let scratch = try Scratch("bt-echo")
        let payload = randomBytes(100_000, seed: 9)
        let input = try scratch.write("in.bin", payload)
        let r = try await modem(["bt", "connect", "--hci", "tcp:127.0.0.1:\(p.port)", "--address", p.deviceAddress,
                                 "--capture", scratch.file("c.pcap")], stdinFile: input, timeout: 120)
        #expect(r.status == 0, "\(r)")
        #expect(r.stdout == payload, "\(r.stdout.count) of \(payload.count) bytes came back")
        // The capture is a pcap with linktype 201 (Bluetooth H4 with direction).
        let pcap = try readBytes(scratch.file("c.pcap"))
        #expect(pcap.count > 24 && pcap[20] == 201 && pcap[0] == 0xD4, "not a linktype-201 pcap")
    }

    @Test("tshark decodes a bt connect capture down to RFCOMM: SDP for the Serial Port, the UIH payload both ways, nothing malformed", .requires(BumblePeer.venv, Peers.tshark))
    func tsharkDecodesTheCapture() async throws {
        let tshark = try Peers.tshark.path()
        let p = try await peer([])
        defer { p.stop() }
        let scratch = try Scratch("bt-tshark")
        let payload = randomBytes(5_000, seed: 21)
        let input = try scratch.write("in.bin", payload)
        let capture = scratch.file("c.pcap")
        let r = try await modem(["bt", "connect", "--hci", "tcp:127.0.0.1:\(p.port)", "--address", p.deviceAddress,
                                 "--capture", capture], stdinFile: input, timeout: 60)
        #expect(r.status == 0 && r.stdout == payload, "\(r)")

        let hex = payload.map { String(format: "%02x", $0) }.joined()
        let rfcomm = try await runProcess(tshark, ["-r", capture, "-Y", "btrfcomm"])
        #expect(rfcomm.status == 0, "\(rfcomm)")
        for frame in ["SABM Channel=0", "UA Channel=0", "(PN)", "SABM Channel=1", "(MSC)", "UIH Channel=1"] {
            #expect(rfcomm.stdoutText.contains(frame), "no \(frame) among the RFCOMM frames: \(rfcomm.stdoutText)")
        }
        // The payload frames on channel 1, in order: direction 0x00 (sent) is the input, 0x01 (received) the echo.
        let data = try await runProcess(tshark, ["-r", capture, "-Y", "btrfcomm.channel == 1 && btrfcomm.len > 0",
                                                 "-T", "fields", "-e", "hci_h4.direction", "-e", "btspp.data"])
        #expect(data.status == 0, "\(data)")
        var sent = "", received = ""
        for line in data.stdoutText.split(separator: "\n") {
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false)
            guard fields.count == 2 else { continue }
            if fields[0] == "0x00" { sent += fields[1] } else if fields[0] == "0x01" { received += fields[1] }
        }
        #expect(sent == hex, "tshark's RFCOMM payload sent: \(sent.count / 2) bytes, \(payload.count) written")
        #expect(received == hex, "tshark's RFCOMM payload received: \(received.count / 2) bytes, \(payload.count) echoed")
        // SDP: our search for the Serial Port class and the answer naming RFCOMM channel 1.
        let sdp = try await runProcess(tshark, ["-r", capture, "-Y", "btsdp", "-V"])
        #expect(sdp.stdoutText.contains("Service Search Attribute Request"), "\(sdp.stdoutText.prefix(2000))")
        #expect(sdp.stdoutText.contains("Serial Port (0x1101)"), "\(sdp.stdoutText.prefix(2000))")
        #expect(sdp.stdoutText.contains("RFCOMM Channel: 1"), "\(sdp.stdoutText.prefix(2000))")
        // Not one packet tshark finds malformed.
        let malformed = try await runProcess(tshark, ["-r", capture, "-Y", "_ws.malformed"])
        #expect(malformed.status == 0 && malformed.stdoutText.isEmpty, "\(malformed)")
    }

    @Test("bt connect: the device drops the link mid-transfer (ACL, RFCOMM DISC, link loss)", .requires(BumblePeer.venv), arguments: ["acl", "dlc", "linkloss"])
    func drop(_ mode: String) async throws {
        let p = try await peer(["--drop-after", "5000", "--drop-mode", mode])
        defer { p.stop() }
        let scratch = try Scratch("bt-drop")
        let payload = randomBytes(20_000, seed: 3)
        let input = try scratch.write("in.bin", payload)
        let r = try await modem(["bt", "connect", "--hci", "tcp:127.0.0.1:\(p.port)", "--address", p.deviceAddress],
                                stdinFile: input, timeout: 30)
        #expect(r.status == 4, "\(r)")
        #expect(r.seconds < 10)
        #expect(r.stdout == Array(payload.prefix(5000)), "\(mode): \(r.stdout.count) bytes written")
        let expected = ["acl": "0x13", "dlc": "RFCOMM channel 1", "linkloss": "link lost"][mode]!
        #expect(r.stderrText.contains(expected), "\(mode): \(r.stderrText)")
    }

    @Test("the controller closes its H4 socket mid-transfer: bt connect exits 1 naming it, every byte that arrived written", .requires(BumblePeer.venv))
    func controllerSocketCloses() async throws {
        let p = try await peer(["--drop-after", "5000", "--drop-mode", "socket"])
        defer { p.stop() }
        let scratch = try Scratch("bt-socket")
        let payload = randomBytes(20_000, seed: 6)
        let input = try scratch.write("in.bin", payload)
        let r = try await modem(["bt", "connect", "--hci", "tcp:127.0.0.1:\(p.port)", "--address", p.deviceAddress],
                                stdinFile: input, timeout: 30)
        #expect(r.status == 1, "\(r)")
        #expect(r.seconds < 10)
        #expect(r.stderrText.contains("the controller at tcp:127.0.0.1:\(p.port) closed the connection"), "\(r.stderrText)")
        #expect(!r.stderrText.contains("closed: the controller transport closed"), "said twice: \(r.stderrText)")
        #expect(r.stdout == Array(payload.prefix(5000)), "\(r.stdout.count) bytes written")
    }

    @Test("link-test over RFCOMM, our stack on both ends: 200 of 200 in master-slave and duplex", .requires(BumblePeer.venv), arguments: ["master-slave", "duplex"])
    func linkTest(_ mode: String) async throws {
        let p = try await peer(["--expose-b", "0"])   // port 0: the peer picks a free one
        defer { p.stop() }
        let scratch = try Scratch("bt-link-test")
        let device = try await TNCBackgroundProcess(try Paths.modem(), ["bt", "device", "--hci", "tcp:127.0.0.1:\(p.portB!)", "--name", "Bars Device"],
                                              in: scratch, name: "device")
        defer { device.stop(SIGTERM) }
        // Its controller is discoverable and connectable, its Serial Port record published.
        try await device.awaitStderr("the device's 'discoverable' line") { $0.contains(": discoverable") }
        let r = try await modem(["link-test", "--channel", "bluetooth", "--hci", "tcp:127.0.0.1:\(p.port)", "--address", "00:1B:DC:00:00:0B",
                                 "--mode", mode, "--count", "200", "--size", "64", "--json"], timeout: 120)
        #expect(r.status == 0, "\(r)")
        let line = try #require(r.stdoutText.split(separator: "\n").last)
        let s = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect((s["completed"] as? Int) == 200, "\(s)")
        #expect((s["corruptDelivered"] as? Int) == 0 && (s["duplicatesDelivered"] as? Int) == 0, "\(s)")
    }

    /// Runs `modem bt device` on the peer's port until `done` says the peer's lines show it finished
    /// and the device's log satisfies `logged` (waits for their output, with 60 s and 30 s hang guards:
    /// a timeout is recorded naming what was awaited); the device's log.
    private func runDevice(_ p: BumblePeer, until done: ([String]) -> Bool, _ what: String,
                           logged: (String) -> Bool = { _ in true }) async throws -> String {
        let port = p.port
        let scratch = try Scratch("bt-device")
        let device = try await TNCBackgroundProcess(try Paths.modem(), ["bt", "device", "--hci", "tcp:127.0.0.1:\(port)", "--name", "Bars Device"],
                                              in: scratch, name: "device")
        if !(await p.waitForLines(timeout: 60, done)) { Issue.record("the peer did not finish (\(what)) within 60 s") }
        // The device's log of the disconnection.
        if !(await device.waitForStderr(timeout: 30, logged)) {
            Issue.record("the device did not log \(what) within 30 s: \(device.stderrText)")
        }
        device.signal(SIGTERM)
        try await device.awaitExit("exit after SIGTERM")
        return device.stderrText
    }

    @Test("Bumble pages our bt device, finds its Serial Port record by SDP, opens RFCOMM, writes and closes", .requires(BumblePeer.venv))
    func bumbleConnectsToOurDevice() async throws {
        let p = try await peer(["--connect-to-host"])
        defer { p.stop() }
        let log = try await runDevice(p, until: { lines in
            lines.contains { $0 == "PEER-RFCOMM done" || $0.hasPrefix("PEER-RFCOMM error=") }
        }, "the phone closing RFCOMM channel 1", logged: { $0.contains("the phone closed RFCOMM channel 1") })
        let lines = p.lines
        #expect(lines.contains("PEER-RFCOMM connected address=\(p.hostAddress)"), "\(lines)")
        #expect(lines.contains("PEER-RFCOMM channel=1"), "Bumble's SDP search found no channel 1: \(lines)")
        #expect(lines.contains { $0.hasPrefix("PEER-RFCOMM sent=") }, "the DLC did not open: \(lines)")
        #expect(lines.contains("PEER-RFCOMM done"), "\(lines)\nour device: \(log)\nthe peer's warnings: \(p.errorLines)")
        #expect(!lines.contains { $0.contains("error=") }, "\(lines)")
        // Our device saw the phone connect and then close the channel, in the phone's terms.
        #expect(log.contains("connected: \(p.deviceAddress), RFCOMM channel 1"), "\(log)")
        #expect(log.contains("the phone closed RFCOMM channel 1"), "\(log)")
    }

    @Test("our bt device answers Bumble's hand-made RFCOMM frames: UA, RPN, RLS, Test, NSC for an unknown type, UA for DISC", .requires(BumblePeer.venv))
    func rawRFCOMMAnswers() async throws {
        let p = try await peer(["--raw-rfcomm"])
        defer { p.stop() }
        _ = try await runDevice(p, until: { lines in lines.contains { $0.hasPrefix("PEER-RAW ") } }, "the raw RFCOMM script")
        let lines = p.lines
        #expect(lines.contains("PEER-RAW done"), "\(lines)")
        #expect(!lines.contains { $0.hasPrefix("PEER-NO-ANSWER") }, "a frame went unanswered: \(lines)")
        let answers = lines.filter { $0.hasPrefix("PEER-ANSWER ") }.map { line in
            String(line.dropFirst("PEER-ANSWER ".count).prefix(upTo: line.range(of: " hex=")?.lowerBound ?? line.endIndex))
        }
        // DLCI 2's address octet is 0x0B; RPN's answer to a query is the default 9600 baud, 8 data bits,
        // no parity, 1 stop bit, no flow control, XON 0x11, XOFF 0x13 with every mask bit (RFCOMM/07.10 5.4.6.3.9);
        // NSC names the unknown type octet 0x47 (type 0x11, EA, C/R). Every answer is a response (cr=0).
        let test = Array("SwiftModem test".utf8).map { String(format: "%02x", $0) }.joined()
        #expect(answers == ["type=UA dlci=0 cr=1",
                            "type=RPN dlci=0 cr=0 value=0b0303001113ff3f",
                            "type=RLS dlci=0 cr=0 value=0b03",
                            "type=TEST dlci=0 cr=0 value=\(test)",
                            "type=NSC dlci=0 cr=0 value=47",
                            "type=UA dlci=0 cr=1"], "\(lines)")
    }

    @Test("bt connect to a device that asks for authentication: Secure Simple Pairing (just works), then the echo", .requires(BumblePeer.venv))
    func pairing() async throws {
        let p = try await peer(["--pair"])
        defer { p.stop() }
        let scratch = try Scratch("bt-pair")
        let payload = randomBytes(10_000, seed: 5)
        let input = try scratch.write("in.bin", payload)
        let r = try await modem(["bt", "connect", "--hci", "tcp:127.0.0.1:\(p.port)", "--address", p.deviceAddress],
                                stdinFile: input, timeout: 60)
        #expect(r.status == 0, "\(r)")
        #expect(r.stdout == payload, "\(r.stdout.count) of \(payload.count) bytes came back")
        #expect(await p.waitForLine(startingWith: "PEER-PAIR ", timeout: 30) == "PEER-PAIR ok address=\(p.hostAddress)",
                "no 'PEER-PAIR ok' line from the peer within 30 s: \(p.lines)")
    }

    @Test("bad options are usage errors naming the problem")
    func badOptions() async throws {
        for (args, words) in [(["bt", "connect", "--hci", "tcp:127.0.0.1:1", "--address", "nonsense"], "address"),
                              (["bt", "scan", "--hci", "bogus:thing"], "--hci"),
                              (["bt", "connect", "--hci", "tcp:127.0.0.1:1", "--address", "00:1B:DC:00:00:0B", "--channel", "31"], "channel")] {
            let r = try await modem(args, timeout: 20)
            #expect(r.status == 64, "\(r)")
            #expect(r.stderrText.contains(words), "\(r.stderrText)")
        }
        // Nothing listening at the TCP port: a setup failure, one line, exit 1.
        let r = try await modem(["bt", "scan", "--hci", "tcp:127.0.0.1:1"], timeout: 20)
        #expect(r.status == 1 && r.stderrText.contains("refused"), "\(r)")
    }
}

/// The `modem bt` cases whose point is a real-time figure: the 10 s RFCOMM credit timeout. scripts/test.sh
/// runs the `RealTimeTests` suites in a group of their own, one at a time.
@Suite("modem bt against the Bumble peer (real time)", .serialized)
struct BluetoothRealTimeTests {
    @Test("bt connect to a device that never tops up RFCOMM credits: gives up after the 10 s credit timeout, naming it, exit 4 (real time)", .requires(BumblePeer.venv),
          .timeLimit(.minutes(2)))
    func noCredits() async throws {
        let p = try await peer(["--no-credits"])
        defer { p.stop() }
        let scratch = try Scratch("bt-nocredits")
        let payload = randomBytes(20_000, seed: 4)
        let input = try scratch.write("in.bin", payload)
        let r = try await modem(["bt", "connect", "--hci", "tcp:127.0.0.1:\(p.port)", "--address", p.deviceAddress],
                                stdinFile: input, timeout: 60)
        #expect(r.status == 4, "\(r)")
        #expect(r.stderrText.contains("granted no credits for 10 s"), "\(r.stderrText)")
        // The real-time figure: the credit timeout (10 s), measured on the whole run.
        #expect(r.seconds > 9 && r.seconds < 20, "gave up after \(r.seconds) s")
        // What was sent on the credits Bumble gave in PN came back, and nothing else.
        #expect(!r.stdout.isEmpty && r.stdout.count < payload.count && r.stdout == Array(payload.prefix(r.stdout.count)),
                "\(r.stdout.count) bytes written")
    }
}
