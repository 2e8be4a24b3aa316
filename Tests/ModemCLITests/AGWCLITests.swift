import Foundation
import Testing
import ModemTestSupport
import ProcessTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// The questions both AGW servers are asked, in order, and the answers that come back (`H`, `P` and
/// `m` have none).
enum AGWSession {
    static let questions: [AGWMessage] = [
        AGWMessage(kind: "R"), AGWMessage(kind: "G"), AGWMessage(kind: "g"),
        AGWMessage(kind: "X", from: "N0CALL"), AGWMessage(kind: "X", from: "N0CALL"), AGWMessage(port: 1, kind: "X", from: "N0CALL"),
        AGWMessage(kind: "H"), AGWMessage(kind: "P"), AGWMessage(kind: "y"), AGWMessage(kind: "x", from: "N0CALL"),
        AGWMessage(kind: "m"), AGWMessage(kind: "R"),
        // Last: Dire Wolf answers these two from its data-link thread, so they may come in either order.
        AGWMessage(kind: "Y", from: "N0CALL", to: "N1ABC"), AGWMessage(kind: "d", from: "N0CALL", to: "N9ZZZ"),
    ]
    static let answerKinds: [Character] = ["R", "G", "g", "X", "X", "X", "y", "R", "Y", "d"]

    /// Asks the questions and returns the answers (60 s hang guard).
    static func run(port: Int? = nil, direWolf: DireWolfTNC? = nil) async throws -> [AGWMessage] {
        let client = try await direWolf?.connectAGWClient() ?? AGWTestClient(port: port!)
        defer { client.close() }
        for q in questions { try client.send(q) }
        // `m` turns monitoring on: frames heard meanwhile (a file being decoded) come as monitor messages,
        // which answer nothing and are left out.
        let isMonitor: (AGWMessage) -> Bool = { "UISTK".contains($0.kind) }
        let answers = try await client.awaitMessages("\(answerKinds.count) answers") { $0.filter { !isMonitor($0) }.count >= answerKinds.count }
            .filter { !isMonitor($0) }
        // The connected-mode answers in a fixed order: Y, then d.
        return answers.prefix(8) + answers.dropFirst(8).sorted { $0.kind == "Y" && $1.kind != "Y" }
    }

    /// What the answers should say, field by field (the same for Dire Wolf 1.8 and `modem tnc`).
    static func check(_ a: [AGWMessage], who: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(a.map(\.kind) == answerKinds, "\(who): \(a)", sourceLocation: sourceLocation)
        guard a.count == answerKinds.count else { return }
        #expect(a[0].data == [0xD5, 0x07, 0, 0, 0x7F, 0, 0, 0], "\(who) R: version 2005.127", sourceLocation: sourceLocation)
        #expect(a[1].text == "1;Port1 first soundcard mono;" && a[1].data.last == 0, "\(who) G: \(a[1])", sourceLocation: sourceLocation)
        #expect(a[2].data == [0, 1, 0x19, 4, 0xC8, 4, 7, 0, 1, 0, 0, 0], "\(who) g: \(a[2])", sourceLocation: sourceLocation)
        #expect(a[3].port == 0 && a[3].from == "N0CALL" && a[3].data == [1], "\(who) X: \(a[3])", sourceLocation: sourceLocation)
        #expect(a[4].data == [1], "\(who) X again: the same callsign twice is a success", sourceLocation: sourceLocation)
        #expect(a[5].port == 1 && a[5].data == [0], "\(who) X on a port that does not exist: \(a[5])", sourceLocation: sourceLocation)
        #expect(a[6].data == [0, 0, 0, 0], "\(who) y: \(a[6])", sourceLocation: sourceLocation)
        #expect(a[7].data == a[0].data, "\(who) R again", sourceLocation: sourceLocation)
        #expect(a[8].from == "N0CALL" && a[8].to == "N1ABC" && a[8].data == [0, 0, 0, 0], "\(who) Y: \(a[8])", sourceLocation: sourceLocation)
        #expect(a[9].from == "N9ZZZ" && a[9].to == "N0CALL" && a[9].text == "*** DISCONNECTED From Station N9ZZZ\r", "\(who) d: \(a[9])", sourceLocation: sourceLocation)
    }

    /// A monitor message's text without its `[HH:MM:SS]` (the two clocks need not agree).
    static func untimed(_ m: AGWMessage) -> String {
        guard let open = m.text.firstIndex(of: "["), let close = m.text[open...].firstIndex(of: "]") else { return m.text }
        return String(m.text[..<open]) + String(m.text[m.text.index(after: close)...])
    }
}

/// `modem tnc --agw` as a separate process, without a peer: a file's frames to a monitoring client,
/// the answers Dire Wolf gives (checked against it in ``AGWDireWolfRealTimeTests``), the connect notice.
@Suite("modem tnc --agw (AGW) CLI")
struct AGWCLITests {
    @Test("--agw 0 and --kiss-port 0 both announced; AGW questions answered as Dire Wolf answers them; a file's frames reach a monitoring client",
          .timeLimit(.minutes(2)))
    func answersAndMonitor() async throws {
        let dir = try Scratch("AGWCLITests")
        let text = try dir.write("in.txt", "N0CALL>APRS,WIDE1-1:one over agw\nN1CALL-7>APRS:two over agw\n")
        try await modemTx(["--profile", "bell202", "--framing", "ax25"], input: text, out: dir.file("in.wav"))
        let tnc = try await TNCBackgroundProcess(try Paths.modem(), ["tnc", "-q", "--input", dir.file("in.wav"), "--output", dir.file("out.wav"),
                                                                             "--agw", "0", "--kiss-port", "0"],
                                                 in: dir, name: "tnc")
        defer { tnc.kill() }
        let agwPort = try await tnc.announcedPort(after: "AGW on 127.0.0.1:")
        _ = try await tnc.kissPort()
        // The questions first: with --input, decoding starts when the first client connects.
        AGWSession.check(try await AGWSession.run(port: agwPort), who: "modem tnc")
        // Monitoring through the process: what the TNC transmits comes back as T frames. (Frames decoded from
        // the file go to the clients monitoring when they are decoded, which began with the first client: a
        // race between clients, so the U frames are checked in-process, in AGWTests.)
        let monitor = try AGWTestClient(port: agwPort)
        try monitor.send(AGWMessage(kind: "m"))
        try monitor.send(AGWMessage(kind: "R"))
        _ = try await monitor.awaitMessages("R answered after m") { $0.contains { $0.kind == "R" } }
        try monitor.send(AGWMessage(kind: "M", from: "N0CALL", to: "APRS", data: Array("three over agw".utf8)))
        try monitor.send(AGWMessage(kind: "C", from: "N0CALL", to: "N9ZZZ"))
        let got = try await monitor.awaitMessages("two T monitor frames") { $0.filter { $0.kind == "T" }.count == 2 }
        let t = got.filter { $0.kind == "T" }.map(AGWSession.untimed)
        #expect(t.first == " 1:Fm N0CALL To APRS <UI pid=F0 Len=14 PF=0 >\rthree over agw\r", "\(got)")
        #expect(t.last?.hasPrefix(" 1:Fm N0CALL To N9ZZZ <SABME") == true, "the call: \(got)")
        tnc.signal(SIGINT)
        #expect(await tnc.wait(timeout: 30), "modem tnc did not stop within 30 s of SIGINT")
        #expect(tnc.exitedNormally && tnc.status == 0, "exit \(tnc.status): \(tnc.stderrText)")
        #expect(tnc.stderrText.split(separator: "\n").count == 1, "-q: only the ports: \(tnc.stderrText)")
    }

    @Test("Bad --agw values and a missing server are usage errors (64) naming the option",
          arguments: [(["--agw", "70000"], "--agw"), (["--agw", "-5"], "-5"), (["--kiss-port", "9000", "--agw", "9000"], "share")])
    func badOptions(arguments: [String], mention: String) async throws {
        let r = try await modem(["tnc", "--device", "null"] + arguments)
        #expect(r.status == 64, "\(r)")
        #expect(r.stderrText.contains(mention), "\(r)")
    }
}

/// Dire Wolf 1.8 as a live peer over audio: its `direwolf` and `modem tnc --device default` share the
/// private PulseAudio null sink (each plays into it and captures its monitor, so each hears the other
/// and itself). Real time: the frames cross as sound at 1200 baud.
@Suite("AGW with Dire Wolf 1.8 over the null sink (real time)", .serialized)
struct AGWDireWolfRealTimeTests {
    @Test("The same AGW questions to Dire Wolf and to modem tnc: the same answers (real time)",
          .requires(SoundServer.pulseAudio, SoundServer.pactl, Peers.direwolf18, Peers.stdbuf), .timeLimit(.minutes(3)))
    func sameAnswers() async throws {
        try await Self.withDireWolfAndTNC("AGWAnswers") { dw, tnc, port in
            let theirs = try await AGWSession.run(direWolf: dw)
            let ours = try await AGWSession.run(port: port)
            await dw.stop()
            AGWSession.check(theirs, who: "Dire Wolf 1.8")
            AGWSession.check(ours, who: "modem tnc")
            // Field by field, the two agree on everything.
            #expect(theirs == ours, "Dire Wolf: \(theirs)\nmodem tnc: \(ours)")
        }
    }

    @Test("A UI frame sent through our AGW is decoded by Dire Wolf, and one sent through Dire Wolf's reaches ours (real time)",
          .requires(SoundServer.pulseAudio, SoundServer.pactl, Peers.direwolf18, Peers.stdbuf), .timeLimit(.minutes(3)))
    func framesBothWays() async throws {
        try await Self.withDireWolfAndTNC("AGWAudio") { dw, tnc, port in
            let theirs = try await dw.connectAGWClient()
            let ours = try AGWTestClient(port: port)
            do {
                try await exchange(theirs: theirs, ours: ours, dw: dw, tnc: tnc)
            } catch {
                throw HarnessError("\(error)\nmodem tnc:\n\(tnc.stderrText.suffix(3000))\nDire Wolf (\(dw.logPath)):\n"
                                   + dw.process.stdoutText.split(separator: "\n").filter { !$0.contains("root") && !$0.contains("privileges") }.suffix(30).joined(separator: "\n"))
            }
        }
    }

    /// Dire Wolf's own connected-mode test between two TNCs over AGW (tnctest-20: tnctest with its count
    /// of lines made 20): TNC 0 connects to TNC 1, sends numbered lines in growing bursts, TNC 1 answers
    /// each (and 26 more lines after the first), then TNC 0 disconnects; it passes when every reply came
    /// back in order and both ends saw the link go up and down. Run with our TNC calling Dire Wolf, and
    /// with Dire Wolf calling ours (an incoming link to a call an AGW client registered).
    @Test("tnctest: a connected-mode session between modem tnc and Dire Wolf through the null sink (real time)",
          .requires(SoundServer.pulseAudio, SoundServer.pactl, Peers.direwolf18, Peers.stdbuf, Peers.tnctest20), .timeLimit(.minutes(6)),
          arguments: [true, false])
    func tnctestSession(oursCalls: Bool) async throws {
        try await Self.withDireWolfAndTNC("AGWTnctest") { dw, tnc, port in
            let ours = "localhost:\(port)=modem-tnc", theirs = "localhost:\(dw.agwPort)=direwolf"
            let result = try await runProcess(try Peers.tnctest20.path(), oursCalls ? [ours, theirs] : [theirs, ours], timeout: 280)
            await dw.stop()
            #expect(result.succeeded && result.stdoutText.contains("Success!"),
                    "tnctest: \(result)\n\(result.stdoutText.suffix(3000))\nmodem tnc:\n\(tnc.stderrText.suffix(3000))")
            // Every reply came back, the last one included.
            #expect(result.stdoutText.contains("0020 reply"))
        }
    }

    /// Runs `body` with a private null sink, Dire Wolf on it and `modem tnc --device default --agw 0`
    /// on it too (given with its AGW port); stops both afterwards.
    private static func withDireWolfAndTNC(_ label: String, _ body: (DireWolfTNC, TNCBackgroundProcess, Int) async throws -> Void) async throws {
        try await withLoop(label) { pulse in
            let dir = try Scratch("AGWDireWolf")
            let dw = try await DireWolfTNC.start(in: dir, pulseServer: pulse)
            let tnc = try await TNCBackgroundProcess("/usr/bin/env", [pulse, try Paths.modem(), "tnc", "--device", "default", "--agw", "0"],
                                                     in: dir, name: "tnc")
            defer { tnc.kill() }
            do {
                try await body(dw, tnc, try await tnc.announcedPort(after: "AGW on 127.0.0.1:"))
            } catch {
                await dw.stop()
                throw error
            }
            await dw.stop()
        }
    }

    /// Each way a UI frame, then the monitor and raw messages on both sides compared.
    private func exchange(theirs: AGWTestClient, ours: AGWTestClient, dw: DireWolfTNC, tnc: TNCBackgroundProcess) async throws {
        // Monitor and raw frames on, and the event that each server has read those toggles: the answer
        // to an R sent after them (Dire Wolf reads a new client's commands within a second of accepting it).
        for c in [theirs, ours] {
            try c.send(AGWMessage(kind: "m"))
            try c.send(AGWMessage(kind: "k"))
            try c.send(AGWMessage(kind: "R"))
            try await c.awaitMessages("the answer to R after m and k") { $0.contains { $0.kind == "R" } }
        }
        // Ours to Dire Wolf: M (no path).
        let toThem = "hello Dire Wolf, from SwiftModem's AGW"
        try ours.send(AGWMessage(kind: "M", pid: 0xF0, from: "N0US", to: "APRS", data: Array(toThem.utf8)))
        let heard = try await theirs.awaitMessages("Dire Wolf's U and K for our frame", hangGuard: 60) { m in
            m.contains { $0.kind == "U" && $0.text.hasSuffix(toThem + "\r") } && m.contains { $0.kind == "K" && $0.from == "N0US" }
        }
        let sentByUs = try await ours.awaitMessages("our T for our frame") { m in m.contains { $0.kind == "T" && $0.from == "N0US" } }
        let theirU = try #require(heard.first { $0.kind == "U" })
        let ourT = try #require(sentByUs.first { $0.kind == "T" })
        #expect(theirU.from == "N0US" && theirU.to == "APRS")
        #expect(AGWSession.untimed(theirU) == AGWSession.untimed(ourT), "Dire Wolf heard: \(theirU)\nwe sent: \(ourT)")
        let theirK = try #require(heard.first { $0.kind == "K" })
        #expect(theirK.data.first == 0)
        // Dire Wolf to ours: V with a path.
        let toUs = "hello SwiftModem, from Dire Wolf's AGW"
        try theirs.send(AGWMessage(kind: "V", pid: 0xF0, from: "N0DW", to: "APRS",
                                   data: [1] + Array("WIDE1-1".utf8) + [0, 0, 0] + Array(toUs.utf8)))
        let ourHeard = try await ours.awaitMessages("our U and K for Dire Wolf's frame", hangGuard: 60) { m in
            m.contains { $0.kind == "U" && $0.text.hasSuffix(toUs + "\r") } && m.contains { $0.kind == "K" && $0.from == "N0DW" }
        }
        let sentByThem = try await theirs.awaitMessages("Dire Wolf's T for its frame") { m in m.contains { $0.kind == "T" && $0.from == "N0DW" } }
        let ourU = try #require(ourHeard.first { $0.kind == "U" && $0.from == "N0DW" })
        let theirT = try #require(sentByThem.first { $0.kind == "T" && $0.from == "N0DW" })
        #expect(AGWSession.untimed(ourU) == AGWSession.untimed(theirT), "we heard: \(ourU)\nDire Wolf sent: \(theirT)")
        #expect(AGWSession.untimed(ourU) == " 1:Fm N0DW To APRS Via WIDE1-1 <UI pid=F0 Len=\(toUs.utf8.count) PF=0 >\r\(toUs)\r")
        // The raw frames agree too: what Dire Wolf heard of ours is what we sent, and the reverse.
        let ourK = try #require(ourHeard.first { $0.kind == "K" && $0.from == "N0DW" })
        #expect(ourK.data.count > 16 && Array(ourK.data.suffix(toUs.utf8.count)) == Array(toUs.utf8))
        await dw.stop()
        tnc.signal(SIGINT)
        #expect(await tnc.wait(timeout: 30), "modem tnc did not stop within 30 s of SIGINT")
        #expect(tnc.stderrText.contains("tx N0US>APRS:" + toThem), "\(tnc.stderrText)")
        #expect(tnc.stderrText.contains("rx N0DW>APRS,WIDE1-1:" + toUs), "\(tnc.stderrText)")
    }
}
