import Foundation
import Testing
import ModemTestSupport
import ProcessTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// `modem tnc` as a separate process: against Dire Wolf's KISS client `kissutil` both ways, signals,
/// and its error messages. Every wait is for an event (a line, an exit), bounded by a hang guard far
/// above the expected time.
@Suite("modem tnc (KISS TNC) CLI")
struct TNCCLITests {

    static let lines = [
        "N0CALL>APRS:hello from gen_packets #001",
        "WB2OSZ-15>TEST,WIDE1-1,WIDE2-2:The quick brown fox jumps over the lazy dog #002",
        "K1ABC-7>APZ123,RELAY*,WIDE2-1:!4237.14N/07120.83W>mobile #003",
        "VE4TST-9>APRS,WIDE1-1:the fourth and last #004",
    ]
    static let sent = ["N0CALL>APRS:kiss transmit test one", "N0CALL>APRS,WIDE1-1:kiss transmit test two"]

    @Test("kissutil receives every frame of the input, and what it sends comes out in --output for atest",
          .requires(Peers.kissutil, Peers.genPackets, Peers.atest),
          .timeLimit(.minutes(2)))
    func kissutilBothWays() async throws {
        let dir = try Scratch("TNCCLITests")
        let messages = try dir.write("messages.txt", Self.lines.joined(separator: "\n") + "\n")
        let g = try await runProcess(try Peers.genPackets.path(), ["-r", "44100", "-o", dir.file("in.wav"), messages])
        #expect(g.succeeded, "\(g)")
        let tnc = try await TNCBackgroundProcess(try Paths.modem(), ["tnc", "--input", dir.file("in.wav"), "--output", dir.file("out.wav"),
                                                      "--kiss-port", "0"], in: dir, name: "tnc")
        defer { tnc.kill() }
        let port = try await tnc.kissPort()
        // kissutil exits when its standard input closes: keep the pipe open until the TNC has sent.
        let client = try await TNCBackgroundProcess(try Peers.kissutil.path(), ["-p", String(port)], in: dir, name: "kissutil", stdinPipe: true)
        defer { client.kill() }
        try await tnc.awaitStderr("'input ended'") { $0.contains("input ended") }
        // kissutil has printed every frame of the input before it sends its own.
        try await client.awaitStdout("every frame of the input printed by kissutil") { text in Self.lines.allSatisfy { text.contains($0) } }
        client.writeStdin(Self.sent.joined(separator: "\n") + "\n")
        try await tnc.awaitStderr("'tx' lines for kissutil's frames") { text in Self.sent.allSatisfy { text.contains("tx " + $0) } }
        client.closeStdin()
        #expect(await client.wait(timeout: 30), "kissutil did not exit within 30 s of its input closing")
        tnc.signal(SIGINT)
        #expect(await tnc.wait(timeout: 30), "modem tnc did not stop within 30 s of SIGINT: \(tnc.stderrText)")
        #expect(tnc.exitedNormally && tnc.status == 0, "modem tnc exit \(tnc.status): \(tnc.stderrText)")
        // kissutil printed every frame (gen_packets keeps each line's newline: "<0x0a>").
        let received = client.stdoutText
        for line in Self.lines { #expect(received.contains(line), "kissutil did not print \(line):\n\(received)") }
        #expect(received.components(separatedBy: "#00").count - 1 == Self.lines.count, "\(received)")
        // atest decodes what kissutil sent, from a valid WAV file.
        let a = try await runProcess(try Peers.atest.path(), [dir.file("out.wav")])
        #expect(a.stdoutText.contains("\(Self.sent.count) packets decoded"), "\(a.stdoutText)")
        for line in Self.sent { #expect(a.stdoutText.contains(line), "atest did not decode \(line): \(a.stdoutText)") }
        #expect(try Self.isValidWAV(dir.file("out.wav")))
        #expect(tnc.stderrText.contains("stopped:"), "\(tnc.stderrText)")
    }

    @Test("SIGTERM before any client: exit 0 and a valid (empty) --output", .timeLimit(.minutes(2)))
    func sigtermWithoutClients() async throws {
        let dir = try Scratch("TNCCLITests")
        let text = try dir.write("in.txt", "N0CALL>APRS:one\n")
        try await modemTx(["--profile", "bell202", "--framing", "ax25", "--rate", "22050"], input: text, out: dir.file("in.wav"))
        let tnc = try await TNCBackgroundProcess(try Paths.modem(), ["tnc", "--input", dir.file("in.wav"), "--output", dir.file("out.wav"),
                                                      "--kiss-port", "0"], in: dir, name: "tnc")
        defer { tnc.kill() }
        _ = try await tnc.kissPort()
        tnc.signal(SIGTERM)
        #expect(await tnc.wait(timeout: 30), "modem tnc did not stop within 30 s of SIGTERM: \(tnc.stderrText)")
        #expect(tnc.exitedNormally && tnc.status == 0, "exit \(tnc.status): \(tnc.stderrText)")
        #expect(try Self.isValidWAV(dir.file("out.wav")))
        #expect(try readBytes(dir.file("out.wav")).count == 44, "no audio was written, only the header")
    }

    @Test("A client that sends garbage and vanishes changes nothing for another; --quiet keeps standard error empty",
          .timeLimit(.minutes(2)))
    func garbageClientThroughTheCLI() async throws {
        let dir = try Scratch("TNCCLITests")
        let text = try dir.write("in.txt", "N0CALL>APRS:one\nN0CALL>APRS:two\n")
        try await modemTx(["--profile", "bell202", "--framing", "ax25"], input: text, out: dir.file("in.wav"))
        let tnc = try await TNCBackgroundProcess(try Paths.modem(), ["tnc", "-q", "--input", dir.file("in.wav"), "--kiss-port", "0"],
                                 in: dir, name: "tnc")
        defer { tnc.kill() }
        let port = try await tnc.kissPort()   // announced even with -q, because the port was 0
        // The good client connects first: with --input, decoding starts at the first connection, and
        // a client that connects after the (fast) decode has nothing left to receive.
        let good = try KISSTestClient(port: port)
        let bad = try KISSTestClient(port: port)
        try bad.send([UInt8](repeating: 0x7F, count: 10_000) + [0xC0, 0x00, 0xDB, 0x00, 0xC0])
        bad.close()
        var received: [UInt8] = []
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline, received.filter({ $0 == 0xC0 }).count < 4 {
            good.receive()
            received = good.receivedBytes
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(received.filter { $0 == 0xC0 }.count == 4, "two KISS frames expected (waited up to 30 s), got \(received.count) bytes")
        #expect(String(decoding: received, as: UTF8.self).contains("one"))
        #expect(String(decoding: received, as: UTF8.self).contains("two"))
        good.close()
        tnc.signal(SIGINT)
        #expect(await tnc.wait(timeout: 30), "modem tnc did not stop within 30 s of SIGINT")
        #expect(tnc.exitedNormally && tnc.status == 0, "exit \(tnc.status): \(tnc.stderrText)")
        #expect(tnc.stderrText.split(separator: "\n").count == 1, "\(tnc.stderrText)")
    }

    @Test("--device: ALSA's null device, a client's frame is played after channel access; SIGINT exits 0",
          .requires(.file("/usr/share/alsa/alsa.conf", name: "alsa-lib's configuration", remedy: "apt-get install libasound2-data")),
          .timeLimit(.minutes(2)))
    func nullDevice() async throws {
        let dir = try Scratch("TNCCLITests")
        let tnc = try await TNCBackgroundProcess(try Paths.modem(), ["tnc", "--device", "null", "--kiss-port", "0", "--slottime", "2"],
                                 in: dir, name: "tnc")
        defer { tnc.kill() }
        let port = try await tnc.kissPort()
        let client = try KISSTestClient(port: port)
        // FEND, data frame on port 0: N0CALL>APRS:null (addresses shifted left, SSID bytes with the end bit).
        var frame: [UInt8] = [0xC0, 0x00]
        frame += "APRS  ".utf8.map { (c: UInt8) -> UInt8 in c << 1 }
        frame.append(0x60)
        frame += "N0CALL".utf8.map { (c: UInt8) -> UInt8 in c << 1 }
        frame += [0x61, 0x03, 0xF0]
        frame += Array("null".utf8)
        frame.append(0xC0)
        try client.send(frame)
        try await tnc.awaitStderr("'tx N0CALL>APRS:null'") { $0.contains("tx N0CALL>APRS:null") }
        client.close()
        tnc.signal(SIGINT)
        #expect(await tnc.wait(timeout: 30), "modem tnc did not stop within 30 s of SIGINT")
        #expect(tnc.exitedNormally && tnc.status == 0, "exit \(tnc.status): \(tnc.stderrText)")
        #expect(tnc.stderrText.contains("1 transmitted"), "\(tnc.stderrText)")
    }

    @Test("A port in use is one line on standard error and exit 1")
    func portInUse() async throws {
        let dir = try Scratch("TNCCLITests")
        let text = try dir.write("in.txt", "N0CALL>APRS:one\n")
        try await modemTx(["--profile", "bell202", "--framing", "ax25"], input: text, out: dir.file("in.wav"))
        let holder = try TNCTestListener()
        defer { holder.close() }
        let r = try await modem(["tnc", "--input", dir.file("in.wav"), "--output", dir.file("out.wav"),
                                 "--kiss-port", String(holder.port)], timeout: 30)
        #expect(!r.signaled && !r.timedOut && r.status == 1, "\(r)")
        #expect(r.stderrLines.count == 1, "\(r)")
        #expect(r.stderrText.contains("in use") && r.stderrText.contains(String(holder.port)), "\(r)")
        #expect(!FileManager.default.fileExists(atPath: dir.file("out.wav")), "the output was created although the TNC could not start")
    }

    @Test("Bad command lines: usage errors exit 64, a missing input exits 1, each with one clear message",
          arguments: [
              (["tnc", "--input", "MISSING", "--kiss-port", "8001"], Int32(1), "missing.wav"),
              (["tnc", "--input", "IN", "--kiss-port", "70000"], Int32(64), "kiss-port"),
              (["tnc", "--input", "IN", "--kiss-port", "-1"], Int32(64), "kiss-port"),
              (["tnc", "--input", "IN", "--kiss-port", "abc"], Int32(64), "kiss-port"),
              (["tnc", "--input", "IN"], Int32(64), "kiss-port"),
              (["tnc", "--kiss-port", "8001"], Int32(64), "--device"),
              (["tnc", "--input", "IN", "--device", "null", "--kiss-port", "8001"], Int32(64), "--device"),
              (["tnc", "--input", "IN", "--kiss-port", "8001", "--txdelay", "300"], Int32(64), "txdelay"),
              (["tnc", "--input", "IN", "--kiss-port", "8001", "--profile", "nope"], Int32(64), "nope"),
              (["tnc", "--input", "IN", "--kiss-port", "8001", "--profile", "rtty"], Int32(64), "rtty"),
              (["tnc", "--input", "IN", "--kiss-port", "8001", "--profile", "ofdm"], Int32(64), "ofdm"),
              (["tnc", "--input", "IN", "--kiss-port", "8001", "--profile", "v23-back"], Int32(64), "v23-back"),
              (["tnc", "--input", "IN", "--kiss-port", "0", "--bind", "192.0.2.1"], Int32(1), "192.0.2.1"),
          ])
    func badCommandLines(arguments: [String], status: Int32, mention: String) async throws {
        let dir = try Scratch("TNCCLITests")
        let text = try dir.write("in.txt", "N0CALL>APRS:one\n")
        try await modemTx(["--profile", "bell202", "--framing", "ax25"], input: text, out: dir.file("in.wav"))
        let args = arguments.map { $0 == "IN" ? dir.file("in.wav") : $0 == "MISSING" ? dir.file("missing.wav") : $0 }
        let r = try await modem(args, timeout: 30)
        #expect(!r.signaled && !r.timedOut && r.status == status, "\(r)")
        #expect(r.stdout.isEmpty, "\(r)")
        #expect(r.stderrText.contains(mention), "\(r)")
        if status == 1 { #expect(r.stderrLines.count == 1, "\(r)") }
    }

    /// A RIFF/WAVE file whose chunk sizes match its length.
    static func isValidWAV(_ path: String) throws -> Bool {
        let b = try readBytes(path)
        guard b.count >= 44, Array(b[0..<4]) == Array("RIFF".utf8), Array(b[8..<12]) == Array("WAVE".utf8) else { return false }
        func u32(_ i: Int) -> Int { Int(b[i]) | Int(b[i + 1]) << 8 | Int(b[i + 2]) << 16 | Int(b[i + 3]) << 24 }
        guard u32(4) == b.count - 8 else { return false }
        // Walk the chunks to "data".
        var i = 12
        while i + 8 <= b.count {
            let size = u32(i + 4)
            if Array(b[i..<i + 4]) == Array("data".utf8) { return i + 8 + size == b.count }
            i += 8 + size + (size & 1)
        }
        return false
    }
}
