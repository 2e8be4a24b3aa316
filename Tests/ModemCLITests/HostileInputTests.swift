import Foundation
import Synchronization
import Testing
import ProcessTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// What happened to a process run by ``runHostile(_:stdinBytes:holdStdinOpen:stdoutPath:signalWhen:timeout:)``.
struct HostileResult: CustomStringConvertible {
    var status: Int32
    var signaled: Bool
    var hung: Bool
    /// The condition for the signal was not met before the time limit (the process was then killed).
    var neverReady: Bool = false
    var stdout: [UInt8]
    var stderr: String
    /// Seconds from the signal (or the start) to the end.
    var secondsToEnd: Double
    var description: String {
        let how = neverReady ? "NOT READY for the signal (it caught no SIGTERM or left its input unread) and killed"
            : hung ? "HUNG (killed)" : signaled ? "killed by signal \(status)" : "exit \(status)"
        return "\(how) after \(String(format: "%.2f", secondsToEnd)) s, stdout \(stdout.count) bytes, stderr: \(stderr.prefix(600))"
    }
}

/// Runs `modem` on the tests' runner (``ProcessTestSupport/ChildProcess``) with standard input from a pipe (fed `stdinBytes`, then closed unless
/// `holdStdinOpen`), standard output to `stdoutPath` (else captured); with `signalWhen`, sends
/// SIGTERM as soon as the process has its SIGTERM handler and `signalWhen(stdinRead)` holds, where
/// `stdinRead` says every byte fed was read (the event "it is now blocked on its input"; needs
/// `holdStdinOpen`); killed after `timeout` seconds (a hang guard).
func runHostile(_ arguments: [String], stdinBytes: [UInt8] = [], holdStdinOpen: Bool = false, stdoutPath: String? = nil,
                signalWhen: (@Sendable (_ stdinRead: Bool) -> Bool)? = nil, timeout: Double = 30) async throws -> HostileResult {
    precondition(signalWhen == nil || holdStdinOpen, "runHostile: a signal condition needs holdStdinOpen")
    let child = try await ChildProcess(try Paths.modem(), arguments, stdin: .pipe,
                                       stdout: stdoutPath.map { .file($0) } ?? .capture)
    // The child may exit before it has read everything: the write then fails with EPIPE.
    if !stdinBytes.isEmpty { child.writeStdin(stdinBytes) }
    if !holdStdinOpen { child.closeStdin() }
    let begin = Date()
    let deadline = begin.addingTimeInterval(timeout)
    var signalledAt: Date?
    var neverReady = false
    if let ready = signalWhen {
        // Polled every 10 ms (a wait woken at once by the child's end): the process has its handlers
        // (a loaded machine may take a while to start it) and the condition holds (e.g. it read all
        // it was given and waits for more); neither has an event of its own.
        while child.endedAt == nil, Date() < deadline,
              !(catchesSIGTERM(child.pid) && ready(child.stdinDrained)) {
            _ = await child.wait(timeout: 0.01)
        }
        if child.endedAt == nil {
            if Date() >= deadline { neverReady = true } else { child.signal(SIGTERM); signalledAt = Date() }
        }
    }
    let ended = await child.wait(timeout: max(0, deadline.timeIntervalSinceNow))
    if !ended {
        child.signal(SIGKILL)
        _ = await child.wait(timeout: 60)
    }
    if holdStdinOpen { child.closeStdin() }
    let result = child.result(timedOut: !ended)
    let seconds = (child.endedAt ?? Date()).timeIntervalSince(signalledAt ?? child.startedAt)
    return HostileResult(status: result.status, signaled: result.signaled, hung: !ended, neverReady: neverReady,
                         stdout: result.stdout, stderr: result.stderrText, secondsToEnd: seconds)
}

/// Bytes written into the pipe or FIFO `fd` (either end) and not read yet, or -1 when it cannot be told.
func bytesUnread(_ fd: Int32) -> Int32 {
    var count: Int32 = 0
    return ioctl(fd, UInt(FIONREAD), &count) == 0 ? count : -1
}

/// A FIFO with a thread writing bytes into it: it opens the FIFO (waiting for a reader), writes,
/// and closes it, or with `hold` keeps it open until ``release()`` (a hang guard closes it after
/// 120 s).
final class FIFOWriter: Sendable {
    let path: String
    private let written = EndTime()
    private let released = EndTime()
    private let fd = Mutex<Int32>(-1)

    init(path: String, bytes: [UInt8], hold: Bool) {
        self.path = path
        let writer = Thread { [self] in
            let f = open(path, O_WRONLY)
            guard f >= 0 else { return }
            fd.withLock { $0 = f }
            _ = bytes.withUnsafeBytes { write(f, $0.baseAddress, $0.count) }
            written.mark()
            let begin = Date()
            while hold, !released.isMarked, Date().timeIntervalSince(begin) < 120 { Thread.sleep(forTimeInterval: 0.01) }
            fd.withLock { close($0); $0 = -1 }
        }
        writer.start()
    }

    /// Everything was written and the reader has read it all (it waits for more).
    var drained: Bool { written.isMarked && fd.withLock { $0 >= 0 && bytesUnread($0) == 0 } }

    /// Lets a held FIFO close.
    func release() { released.mark() }
}

/// Whether process `pid` has a handler for SIGTERM (bit 15 of SigCgt in /proc/PID/status).
func catchesSIGTERM(_ pid: Int32) -> Bool {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
          let line = status.split(separator: "\n").first(where: { $0.hasPrefix("SigCgt:") }),
          let mask = UInt64(line.dropFirst("SigCgt:".count).trimmingCharacters(in: .whitespaces), radix: 16) else { return false }
    return mask & (1 << (UInt64(SIGTERM) - 1)) != 0
}

/// A moment (a process ending, a signal sent), marked from any thread.
final class EndTime: Sendable {
    private let when = Mutex<Date?>(nil)
    func mark() { when.withLock { $0 = Date() } }
    /// Whether ``mark()`` was called.
    var isMarked: Bool { when.withLock { $0 != nil } }
    /// The time marked (now, if none was).
    func date() -> Date { when.withLock { $0 } ?? Date() }
}

/// A mono 32-bit float WAV of `samples`, by hand.
func floatWAV(_ samples: [Float], sampleRate: Int = 48000) -> [UInt8] {
    let dataBytes = samples.count * 4
    var out: [UInt8] = Array("RIFF".utf8) + le32(UInt32(36 + dataBytes)) + Array("WAVE".utf8)
    out += Array("fmt ".utf8) + le32(16) + le16(3) + le16(1) + le32(UInt32(sampleRate)) + le32(UInt32(sampleRate * 4)) + le16(4) + le16(32)
    out += Array("data".utf8) + le32(UInt32(dataBytes))
    for s in samples { out += le32(s.bitPattern) }
    return out
}

/// The float samples of a mono f32 WAV written by `modem tx --format f32` (data after the `data` chunk header).
func floatSamples(_ wav: [UInt8]) -> [Float] {
    var i = 12
    while i + 8 <= wav.count {
        let size = Int(UInt32(wav[i + 4]) | UInt32(wav[i + 5]) << 8 | UInt32(wav[i + 6]) << 16 | UInt32(wav[i + 7]) << 24)
        if wav[i..<i + 4].elementsEqual("data".utf8) {
            let body = wav[(i + 8)..<min(wav.count, i + 8 + size)]
            return stride(from: body.startIndex, to: body.endIndex - 3, by: 4).map { j in
                Float(bitPattern: UInt32(wav[j]) | UInt32(wav[j + 1]) << 8 | UInt32(wav[j + 2]) << 16 | UInt32(wav[j + 3]) << 24)
            }
        }
        i += 8 + size + (size & 1)
    }
    return []
}

@Suite("Hostile input: every class gets a clear error or a correct result")
struct HostileInputTests {
    static let text = "HOSTILE INPUT TEST 0123456789\n"

    /// A 300-baud f32 recording of ``text`` in `dir`, and its samples.
    static func recording(_ dir: Scratch) async throws -> (path: String, samples: [Float]) {
        let txt = try dir.write("in.txt", text)
        let wav = dir.file("clean.wav")
        try await modemTx(["--baud", "300", "--format", "f32"], input: txt, out: wav)
        return (wav, floatSamples(try readBytes(wav)))
    }

    static func expectCleanFailure(_ r: ProcessResult, status: Int32? = nil, mentions: [String] = [],
                                   sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(!r.signaled && !r.timedOut, "crashed or hung: \(r)", sourceLocation: sourceLocation)
        if let status { #expect(r.status == status, "\(r)", sourceLocation: sourceLocation) }
        else { #expect(r.status != 0 && r.status < 124, "\(r)", sourceLocation: sourceLocation) }
        for m in mentions { #expect(r.stderrText.lowercased().contains(m.lowercased()), "no '\(m)' in: \(r)", sourceLocation: sourceLocation) }
    }

    // MARK: Extreme and non-finite samples

    @Test("The largest floats: analyze --png and rx finish without a trap")
    func extremeFloats() async throws {
        let dir = try Scratch()
        let (_, samples) = try await Self.recording(dir)
        let huge = dir.file("huge.wav")
        try dir.write("huge.wav", floatWAV(samples.map { $0 * .greatestFiniteMagnitude }))
        let alternating = try dir.write("max.wav", floatWAV((0..<48000).map { $0 % 2 == 0 ? Float.greatestFiniteMagnitude : -.greatestFiniteMagnitude }))
        for input in [huge, alternating] {
            let png = dir.file("s.png")
            let a = try await modem(["analyze", "--png", png, input], timeout: 60)
            #expect(a.succeeded, "\(a)")
            #expect(FileManager.default.fileExists(atPath: png))
            let r = try await modem(["rx", "--baud", "300", input], timeout: 60)
            #expect(r.succeeded, "\(r)")
        }
        let r = try await modem(["rx", "-q", "--baud", "300", huge], timeout: 60)
        #expect(r.stdoutText == Self.text, "a signal scaled to the largest floats still decodes: \(r)")
    }

    @Test("One NaN or infinity does not poison the filters: the rest decodes", arguments: [Float.nan, .infinity, -.infinity])
    func nonFiniteSample(_ bad: Float) async throws {
        let dir = try Scratch()
        let (_, samples) = try await Self.recording(dir)
        var poisoned = samples
        poisoned[200] = bad   // in the leader, before the first character
        let path = try dir.write("poisoned.wav", floatWAV(poisoned))
        let r = try await modem(["rx", "--baud", "300", path], timeout: 60)
        #expect(r.succeeded, "\(r)")
        #expect(r.stdoutText == Self.text, "\(r)")
        #expect(r.stderrText.contains("not finite"), "the repair is not reported: \(r)")
        let a = try await modem(["analyze", path], timeout: 60)
        #expect(a.succeeded && a.stdoutText.contains("modem rx"), "\(a)")
    }

    // MARK: Pipes, FIFOs, standard input

    @Test("rx reads a WAV from standard input: '-', /dev/stdin, and a streamed WAV of unknown length",
          arguments: ["-", "/dev/stdin", "unknown-length"])
    func standardInput(_ how: String) async throws {
        let dir = try Scratch()
        let txt = try dir.write("in.txt", Self.text)
        let wav = dir.file("a.wav")
        try await modemTx(["--baud", "1200"], input: txt, out: wav)
        var bytes = try readBytes(wav)
        if how == "unknown-length" {
            // A streaming writer's placeholders (as sox and ffmpeg write to a pipe).
            bytes.replaceSubrange(4..<8, with: [0xFF, 0xFF, 0xFF, 0xFF])
            let data = try #require(bytes.indices.dropLast(8).first { bytes[$0..<$0 + 4].elementsEqual("data".utf8) })
            bytes.replaceSubrange(data + 4..<data + 8, with: [0xFF, 0xFF, 0xFF, 0xFF])
        }
        let r = try await runHostile(["rx", "-q", "--baud", "1200", how == "/dev/stdin" ? "/dev/stdin" : "-"], stdinBytes: bytes, timeout: 20)
        #expect(!r.hung && !r.signaled && r.status == 0, "\(r)")
        #expect(String(decoding: r.stdout, as: UTF8.self) == Self.text, "\(r)")
    }

    @Test("WAV through a pipe both ways: tx --out - | rx -, impair IN - | rx -, for each sample format",
          arguments: ["s16", "u8", "s24", "s32", "f32"])
    func pipeline(_ format: String) async throws {
        let dir = try Scratch()
        let txt = try dir.write("in.txt", Self.text)
        let wav = dir.file("a.wav")
        try await modemTx(["--baud", "1200"], input: txt, out: wav)
        let m = try Paths.modem()
        let script = """
            set -o pipefail
            '\(m)' tx -q --baud 1200 --format \(format) --out - '\(txt)' | '\(m)' rx -q --baud 1200 - &&
            '\(m)' impair --format \(format) '\(wav)' - | '\(m)' rx -q --baud 1200 -
            """
        let r = try await runProcess("/bin/bash", ["-c", script], timeout: 60)
        #expect(r.succeeded, "\(r)")
        #expect(r.stdoutText == Self.text + Self.text, "\(r)")
    }

    /// A FIFO in `dir`, with a thread writing `bytes` into it (then closing, unless `hold`: then it
    /// stays open until released).
    static func fifo(_ dir: Scratch, _ bytes: [UInt8], hold: Bool = false) throws -> FIFOWriter {
        let path = dir.file("fifo.wav")
        #expect(mkfifo(path, 0o600) == 0)
        return FIFOWriter(path: path, bytes: bytes, hold: hold)
    }

    @Test("rx of a FIFO decodes it and ends (the input is opened once)")
    func fifoRx() async throws {
        let dir = try Scratch()
        let txt = try dir.write("in.txt", Self.text)
        let wav = dir.file("a.wav")
        try await modemTx(["--baud", "1200"], input: txt, out: wav)
        let path = try Self.fifo(dir, try readBytes(wav)).path
        let r = try await modem(["rx", "-q", "--baud", "1200", path], timeout: 20)
        #expect(r.succeeded && r.stdoutText == Self.text, "\(r)")
    }

    @Test("analyze of a FIFO says it needs a file, at once")
    func fifoAnalyze() async throws {
        let dir = try Scratch()
        let txt = try dir.write("in.txt", Self.text)
        let wav = dir.file("a.wav")
        try await modemTx(["--baud", "1200"], input: txt, out: wav)
        let path = try Self.fifo(dir, try readBytes(wav)).path
        let r = try await modem(["analyze", path], timeout: 20)
        Self.expectCleanFailure(r, status: 1, mentions: ["fifo.wav", "stream"])
        #expect(r.stderrLines.count == 1, "\(r)")
    }

    @Test("SIGTERM stops commands blocked on a pipe that stays open: status 143 (128 + SIGTERM) within 3 s",
          arguments: [["rx", "--baud", "1200", "-"], ["tx", "--baud", "1200", "--out", "OUT"],
                      ["tx", "--baud", "1200", "--framing", "ax25", "--out", "OUT"], ["rx", "--baud", "1200", "FIFO"]])
    func signalWhileBlocked(_ template: [String]) async throws {
        let dir = try Scratch()
        let out = try dir.write("out.wav", "precious\n")
        let fifo = template.contains("FIFO") ? try Self.fifo(dir, Array("RIFF".utf8), hold: true) : nil
        defer { fifo?.release() }
        let args = template.map { $0 == "OUT" ? out : $0 == "FIFO" ? fifo!.path : $0 }
        // The signal goes once the command has read what its input held and waits for more.
        let r = try await runHostile(args, stdinBytes: Array("RI".utf8), holdStdinOpen: true,
                                     signalWhen: { stdinRead in fifo?.drained ?? stdinRead }, timeout: 60)
        #expect(!r.hung && !r.signaled, "\(r)")
        #expect(r.status == 143, "\(r)")
        #expect(r.secondsToEnd < 3, "\(r)")
        #expect(try readBytes(out) == Array("precious\n".utf8), "an interrupted command replaced its output")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasPrefix(".") }.isEmpty,
                "a temporary file was left behind")
    }

    @Test("An interrupted file decode exits 143 after SIGTERM, not 0")
    func interruptedDecode() async throws {
        let dir = try Scratch()
        let txt = try dir.write("in.txt", Texts.words(600))
        let wav = dir.file("long.wav")
        try await modemTx(["--baud", "50", "--rate", "8000"], input: txt, out: wav)
        // The WAV goes in through a pipe that stays open after part of it: the decode is interrupted
        // part-way, once the command has read that part and waits for the rest.
        let bytes = try readBytes(wav)
        let r = try await runHostile(["rx", "-q", "--baud", "50", "-"], stdinBytes: Array(bytes.prefix(200_000)), holdStdinOpen: true,
                                     signalWhen: { stdinRead in stdinRead }, timeout: 60)
        #expect(r.status == 143 && !r.signaled, "\(r)")
    }

    @Test("transfer-test on a hopeless channel gives up in channel time: status 1, the counts, the reason")
    func transferTestGivesUp() async throws {
        let r = try await modem(["transfer-test", "--baud", "4800", "--size", "2000", "--loss", "0.9", "--give-up", "30", "--json"],
                                timeout: 120)
        #expect(r.status == 1, "\(r)")
        #expect(r.stdoutText.contains("\"completed\":false") && r.stdoutText.contains("\"endedEarly\":\"gave-up\""), "\(r)")
        #expect(r.stderrText.contains("gave up") && r.stderrText.contains("--give-up"), "\(r)")
    }

    @Test("SIGTERM ends transfer-test at once with its counts so far and status 143")
    func transferTestInterrupted() async throws {
        // 30 % frame loss over a megabyte at 1200 baud: hours of channel time, so the signal comes
        // while it runs; the counts on standard output show it stopped itself (the stop watchdog
        // would exit without them).
        let r = try await runHostile(["transfer-test", "--size", "1000000", "--loss", "0.3", "--json"], holdStdinOpen: true,
                                     signalWhen: { _ in true }, timeout: 120)
        #expect(r.status == 143 && !r.signaled, "\(r)")
        #expect(String(decoding: r.stdout, as: UTF8.self).contains("\"endedEarly\":\"interrupted\""), "\(r)")
        #expect(!r.stderr.contains("still blocked"), "\(r)")
    }

    // MARK: Absurd option values

    @Test("Absurd option values are refused with status 64, no crash, no growth",
          arguments: [["tx", "--baud", "0.0001", "--out", "OUT", "TXT"], ["tx", "--baud", "1e300", "--out", "OUT", "TXT"],
                      ["rx", "--baud", "1e-9", "IN"], ["tx", "--baud", "1200", "--mark", "1e308", "--out", "OUT", "TXT"],
                      ["rx", "--baud", "1200", "--space", "nan", "IN"],
                      ["rx", "--baud", "1200", "--device", "null", "--seconds", "1e300"],
                      ["device", "--seconds", "1e300"], ["link-test", "--frame-payload", "1"],
                      ["link-test", "--timeout", "1e300"], ["link-test", "--baud", "9600", "--sample-rate", "8000"],
                      ["tnc", "--input", "IN", "--kiss-port", "0", "--idle-timeout", "-1"],
                      ["tnc", "--input", "IN", "--kiss-port", "0", "--baud", "0.001"],
                      ["impair", "IN", "OUT", "--deemphasis", "1e300"], ["impair", "IN", "OUT", "--hum", "1e300:-20"],
                      ["tx", "--profile", "nope", "--out", "OUT", "TXT"], ["tx", "--baud", "1200", "--format", "s64", "--out", "OUT", "TXT"],
                      ["link-test", "--mode", "simplex"], ["transfer-test", "--give-up", "0"],
                      ["transfer-test", "--give-up", "1e300"], ["transfer-test", "--give-up", "nan"]])
    func absurdOptions(_ template: [String]) async throws {
        let dir = try Scratch()
        let txt = try dir.write("in.txt", "x\n")
        let wav = dir.file("in.wav")
        try await modemTx(["--baud", "1200"], input: txt, out: wav)
        let out = dir.file("out.wav")
        let args = template.map { $0 == "IN" ? wav : $0 == "TXT" ? txt : $0 == "OUT" ? out : $0 }
        let r = try await modem(args, timeout: 20)
        Self.expectCleanFailure(r, status: 64)
        #expect(!FileManager.default.fileExists(atPath: out), "an output was created")
    }

    @Test("A negative number is the option's value, out of its range, never a 'missing value'",
          arguments: [["pair", "--device", "null", "--seconds", "-1"], ["device", "--seconds", "-1"],
                      ["rx", "--baud", "1200", "--device", "null", "--seconds", "-1"], ["link-test", "--timeout", "-1"],
                      ["link-test", "--loss", "-0.5"], ["transfer-test", "--loss", "-1"], ["tx", "--baud", "-5", "--out", "OUT", "TXT"],
                      ["tnc", "--input", "IN", "--kiss-port", "0", "--idle-timeout", "-1"], ["pair", "--device", "null", "--latency-ms", "-5"]])
    func negativeValues(_ template: [String]) async throws {
        let dir = try Scratch()
        let txt = try dir.write("in.txt", "x\n")
        let args = template.map { $0 == "IN" ? txt : $0 == "TXT" ? txt : $0 == "OUT" ? dir.file("out.wav") : $0 }
        let r = try await modem(args, timeout: 20)
        Self.expectCleanFailure(r, status: 64)
        #expect(!r.stderrText.contains("Missing value"), "\(r)")
        let option = template[template.lastIndex { $0.hasPrefix("--") }!].dropFirst(2)
        #expect(r.stderrText.contains(option), "the message names what is out of range: \(r)")
    }

    @Test("--help lists every profile and format")
    func helpListsValues() async throws {
        let r = try await modem(["tx", "--help"])
        for name in ["bell103-answer", "v23-back", "rtty", "hf300", "g3ruh", "u8", "s24", "f32"] {
            #expect(r.stdoutText.contains(name), "tx --help does not list \(name)")
        }
        let t = try await modem(["tnc", "--help"])
        #expect(t.stdoutText.contains("g3ruh") && t.stdoutText.contains("--idle-timeout"))
        let l = try await modem(["link-test", "--help"])
        #expect(l.stdoutText.contains("master-slave") && l.stdoutText.contains("duplex"))
    }

    // MARK: Outputs that are inputs, outputs kept on failure

    @Test("An output naming the command's own input (same name, a link, another path) is refused; the input survives",
          arguments: [["tx", "--baud", "1200", "--out", "SAME", "IN"], ["impair", "IN", "SAME"], ["analyze", "--png", "SAME", "IN"],
                      ["tnc", "--input", "IN", "--output", "SAME", "--kiss-port", "0"], ["impair", "IN", "LINK"],
                      ["tx", "--baud", "1200", "--out", "HARD", "IN"], ["impair", "IN", "DOTTED"]])
    func outputIsInput(_ template: [String]) async throws {
        let dir = try Scratch()
        let txt = try dir.write("in.txt", "x\n")
        let wav = dir.file("in.wav")
        try await modemTx(["--baud", "1200"], input: txt, out: wav)
        let before = try readBytes(wav)
        try FileManager.default.createSymbolicLink(atPath: dir.file("link.wav"), withDestinationPath: wav)
        try FileManager.default.linkItem(atPath: wav, toPath: dir.file("hard.wav"))
        let args = template.map {
            $0 == "IN" ? wav : $0 == "SAME" ? wav : $0 == "LINK" ? dir.file("link.wav")
                : $0 == "HARD" ? dir.file("hard.wav") : $0 == "DOTTED" ? dir.path + "/./in.wav" : $0
        }
        let r = try await modem(args, timeout: 20)
        Self.expectCleanFailure(r, status: 64, mentions: ["same file"])
        #expect(r.stderrLines.count == 1, "\(r)")
        #expect(try readBytes(wav) == before, "the input was changed")
    }

    @Test("tx reading its own output through standard input is refused")
    func txStdinIsOutput() async throws {
        let dir = try Scratch()
        let path = try dir.write("loop.wav", "some text\n")
        let r = try await modem(["tx", "--baud", "1200", "--out", path], stdinFile: path, timeout: 20)
        Self.expectCleanFailure(r, status: 64, mentions: ["same file"])
        #expect(try readBytes(path) == Array("some text\n".utf8))
    }

    @Test("A command that fails after opening its output leaves the existing file as it was",
          arguments: [["tx", "--baud", "1200", "--out", "OUT", "DIR"], ["impair", "TRUNC", "OUT"], ["tx", "--baud", "1200", "--out", "OUT", "LONGLINE", "--framing", "ax25"]])
    func failureKeepsOutput(_ template: [String]) async throws {
        let dir = try Scratch()
        let out = try dir.write("out.wav", "precious\n")
        let folder = dir.file("folder")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
        // A WAV whose data stops at an odd byte count in a 3-byte format is fine; use a read error instead: a directory.
        let longLine = try dir.write("long.txt", String(repeating: "A", count: 200_000))
        let args = template.map { $0 == "OUT" ? out : $0 == "DIR" ? folder : $0 == "TRUNC" ? folder : $0 == "LONGLINE" ? longLine : $0 }
        let r = try await modem(args, timeout: 20)
        Self.expectCleanFailure(r)
        #expect(try readBytes(out) == Array("precious\n".utf8), "\(r)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasPrefix(".") }.isEmpty)
    }

    @Test("Outputs that cannot be written: a directory, a missing folder, a full device",
          arguments: [["tx", "--baud", "1200", "--out", "DIR", "TXT"], ["tx", "--baud", "1200", "--out", "MISSING", "TXT"],
                      ["tx", "--baud", "1200", "--out", "/dev/full", "TXT"], ["impair", "IN", "/dev/full"],
                      ["tx", "--baud", "1200", "--out", "-", "TXT", "STDOUT=/dev/full"],
                      ["analyze", "--png", "DIR", "IN"], ["analyze", "--png", "/dev/full", "IN"]])
    func unwritableOutputs(_ template: [String]) async throws {
        let dir = try Scratch()
        let txt = try dir.write("in.txt", "x\n")
        let wav = dir.file("in.wav")
        try await modemTx(["--baud", "1200"], input: txt, out: wav)
        let folder = dir.file("folder")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
        let args = template.filter { !$0.hasPrefix("STDOUT=") }
            .map { $0 == "IN" ? wav : $0 == "TXT" ? txt : $0 == "DIR" ? folder : $0 == "MISSING" ? dir.file("no/such/x.wav") : $0 }
        if template.contains("STDOUT=/dev/full") {
            let r = try await runHostile(args, stdoutPath: "/dev/full", timeout: 20)
            #expect(!r.hung && !r.signaled && r.status == 1, "\(r)")
            #expect(r.stderr.contains("standard output") && r.stderr.contains("No space"), "\(r)")
            return
        }
        let r = try await modem(args, timeout: 20)
        Self.expectCleanFailure(r)
        #expect(r.stderrLines.count == 1, "\(r)")
    }

    // MARK: Exit statuses

    @Test("Output lost on a full disk (standard output is /dev/full) exits 1",
          arguments: [["rx", "--baud", "1200", "IN"], ["analyze", "IN"], ["link-test", "--count", "1", "--json"], ["link-test", "--count", "1"]])
    func fullStandardOutput(_ template: [String]) async throws {
        let dir = try Scratch()
        let txt = try dir.write("in.txt", "hello\n")
        let wav = dir.file("in.wav")
        try await modemTx(["--baud", "1200"], input: txt, out: wav)
        let r = try await runHostile(template.map { $0 == "IN" ? wav : $0 }, stdoutPath: "/dev/full", timeout: 30)
        #expect(!r.hung && !r.signaled && r.status == 1, "\(r)")
        #expect(r.stderr.contains("standard output"), "\(r)")
    }

    @Test("A link test in which nothing completed exits 3; its JSON still has every key")
    func linkTestNothingCompleted() async throws {
        let r = try await modem(["link-test", "--count", "2", "--snr", "-40", "--timeout", "1", "--json"], timeout: 60)
        #expect(r.status == 3 && !r.signaled, "\(r)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout)) as? [String: Any])
        for key in ["exchanges", "completed", "timedOut", "failed", "corruptDelivered", "duplicatesDelivered", "meanRoundTripMs", "goodputBps"] {
            #expect(object[key] is NSNumber, "no \(key) in \(r.stdoutText)")
        }
        #expect((object["completed"] as? Int) == 0)
    }

    @Test("Option errors exit 64 in every subcommand, including values that do not fit the input",
          arguments: [["rx", "--baud", "1200", "--channel", "3", "IN"], ["rx", "--baud", "1200", "--mark", "30000", "IN"],
                      ["impair", "IN", "OUT", "--band", "3400-300"], ["impair", "IN", "OUT", "--channel", "2"],
                      ["analyze", "--channel", "5", "IN"], ["tnc", "--input", "IN", "--kiss-port", "0", "--channel", "4"],
                      ["tx", "--baud", "1200", "--framing", "9X1", "--out", "OUT", "TXT"], ["devices", "--baud", "1"]])
    func optionErrorsAre64(_ template: [String]) async throws {
        let dir = try Scratch()
        let txt = try dir.write("in.txt", "x\n")
        let wav = dir.file("in.wav")
        try await modemTx(["--baud", "1200"], input: txt, out: wav)
        let args = template.map { $0 == "IN" ? wav : $0 == "TXT" ? txt : $0 == "OUT" ? dir.file("out.wav") : $0 }
        let r = try await modem(args, timeout: 20)
        Self.expectCleanFailure(r, status: 64)
    }

    @Test("A header with an absurd sample rate or channel count is bad input (status 1), not an option error",
          arguments: [(UInt32(2_000_000_000), UInt16(1)), (UInt32(1), UInt16(1)), (UInt32(48000), UInt16(60000))])
    func absurdHeader(_ rate: UInt32, _ channels: UInt16) async throws {
        let dir = try Scratch()
        var h: [UInt8] = Array("RIFF".utf8) + le32(36 + 4000) + Array("WAVE".utf8)
        h += Array("fmt ".utf8) + le32(16) + le16(1) + le16(channels) + le32(rate) + le32(rate &* UInt32(channels) &* 2)
        h += le16(channels &* 2) + le16(16) + Array("data".utf8) + le32(4000) + [UInt8](repeating: 0, count: 4000)
        let path = try dir.write("absurd.wav", h)
        for args in [["rx", "--baud", "300", path], ["analyze", path], ["tnc", "--input", path, "--kiss-port", "0"]] {
            let r = try await modem(args, timeout: 20)
            Self.expectCleanFailure(r, status: 1, mentions: ["absurd.wav"])
            #expect(r.stderrLines.count == 1, "\(r)")
        }
    }

    @Test("Unreadable inputs of every subcommand: a clear error, status 1", arguments: ["rx", "analyze", "impair", "tnc"])
    func unreadableInputs(_ command: String) async throws {
        let dir = try Scratch()
        let empty = try dir.write("empty.wav", [UInt8]())
        let folder = dir.file("folder.wav")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
        for input in [empty, folder, dir.file("missing.wav")] {
            let args: [String]
            switch command {
            case "rx": args = ["rx", "--baud", "1200", input]
            case "analyze": args = ["analyze", input]
            case "impair": args = ["impair", input, dir.file("out.wav")]
            default: args = ["tnc", "--input", input, "--kiss-port", "0"]
            }
            let r = try await modem(args, timeout: 20)
            Self.expectCleanFailure(r, status: 1, mentions: [URL(fileURLWithPath: input).lastPathComponent])
            #expect(r.stderrLines.count == 1, "\(r)")
        }
    }
}
