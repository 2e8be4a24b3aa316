import Foundation
import ProcessTestSupport
import Synchronization
import Testing

/// The examples in each subcommand's `--help` are what users copy first: every one either runs here,
/// on files this test makes, or is named below with the test that runs it against what it needs
/// (a sound device, a Bluetooth controller, a peer, minutes of channel time). An example added to a
/// help text without a place in one of the two lists fails ``everyExampleAccountedFor()``.
@Suite("Every example in the help texts runs")
struct HelpExamplesTests {
    /// The subcommands whose help shows examples (and a few that might).
    static let commands = ["tx", "rx", "analyze", "impair", "link-test", "transfer-test", "send", "receive", "mailbox", "pair",
                           "keys", "devices", "device", "tnc", "bt", "bt scan", "bt connect", "bt device", "hub"]

    /// Examples that need what a file-only run has not, with the tests that run them (or their kind).
    static let elsewhere: [String: String] = [
        "modem tx --baud 300 --device default < file.bin": "a sound device (tx and rx --device run on the PulseAudio null sink in OFDMAudioRealTimeTests)",
        "modem rx --baud 300 --device default --seconds 10": "a sound device (as above)",
        "modem link-test --mode duplex --count 300 --size 200 --snr 0 --loss 0.2 --drift 500 --json": "25 s of CPU; LinkTestRunTests.faultyChannel runs such a line shorter",
        "modem link-test --channel alsa --device default --count 5 --size 64": "a sound device: LinkTestALSARealTimeTests",
        "modem link-test --channel bluetooth --hci tcp:127.0.0.1:9000 --address 00:1B:DC:00:00:0B --mode duplex --count 200": "a Bluetooth controller and a device (Bumble): BluetoothCLITests",
        "modem transfer-test --channel loopback --size 1048576 --json": "100 s of CPU; the library's TransferTest runs in ModemLinkTests",
        "modem transfer-test --profile ofdm --line cable --size 1048576": "minutes of CPU; OFDMLinkTests and scripts/bench-link.sh",
        "modem transfer-test --profile ofdm --line speaker --size 262144": "minutes of CPU; OFDMLinkTests and scripts/bench-link.sh",
        "modem link-test --profile hf --line hf-fading --mode duplex --count 4 --size 2000": "10-50 s of CPU (failed transmissions on the fading line cost LDPC iterations); HFLinkCLITests runs link-test --profile hf on the steady line",
        "modem transfer-test --profile hf --line hf-fading --snr 10 --size 32768": "a minute of CPU; HFLinkCLITests runs transfer-test --profile hf shorter, Benchmarks/hf-link.sh this line",
        "modem transfer-test --channel loopback --size 262144 --snr 3 --loss 0.1 --seed 2": "minutes of CPU; the library's TransferTest runs in ModemLinkTests",
        "modem transfer-test --channel loopback --size 262144 --cuts 10 --seed 3 --json": "90 s of CPU; the library's TransferTest runs in ModemLinkTests",
        "modem keys trust bob smk1...": "a placeholder for a real key: TransferCLITests trusts real ones",
        "modem mailbox --listen tcp:0.0.0.0:7000 --name alice": "a peer: MailboxCLITests",
        "printf 'hello\\n' | modem mailbox --to tcp:alice.local:7000 --name bob": "a peer: MailboxCLITests",
        "modem mailbox --listen wormhole: --relay-url ws://hub:8080/wormhole/v1": "a rendezvous server and a peer: Tests/scripts/wormhole_modem.py",
        "modem mailbox --to wormhole:7-guitarist-revenge --relay-url ws://hub:8080/wormhole/v1 --trust-as alice": "a rendezvous server and a peer: Tests/scripts/wormhole_modem.py",
        "modem pair --device default": "a sound device and a second end: PairRealTimeTests",
        "modem pair --device default --announce": "a sound device and a second end: PairRealTimeTests",
        "modem device --device default --mode master-slave --baud 1200": "a sound device and a phone end; not run by a test (the library's AudioJackManager is)",
        "modem tnc --input packets.wav --output sent.wav --kiss-port 8001": "a KISS client: TNCCLITests (Dire Wolf's kissutil)",
        "modem tnc --device default --kiss-port 8001": "a sound device and a KISS client; TNCCLITests runs the TNC on the null device",
        "modem tnc --device default --agw": "a sound device and an AGW client on port 8000; AGWDireWolfRealTimeTests runs it with --agw 0 against Dire Wolf over the null sink",
        "modem tnc --device default --kiss-port 0 --agw 0": "a sound device; AGWCLITests runs both servers at once on a file, AGWDireWolfRealTimeTests the AGW one over the null sink",
        "modem bt scan --hci tcp:127.0.0.1:9000 --seconds 3": "a Bluetooth controller (Bumble): BluetoothCLITests",
        "modem bt connect --hci tcp:127.0.0.1:9000 --address 00:1B:DC:00:00:0B < request.bin > reply.bin": "a Bluetooth controller and a device (Bumble): BluetoothCLITests",
        "modem bt device --hci tcp:127.0.0.1:9001 --name \"Bars Device\"": "a Bluetooth controller (Bumble): BluetoothCLITests",
    ]

    /// The example lines of one help text (at a width that does not wrap them): the lines after an
    /// "Example:" or "Examples:" heading that start with a command, without trailing notes.
    static func examples(_ help: String) -> [String] {
        var out: [String] = []
        var inside = false
        for raw in help.split(separator: "\n", omittingEmptySubsequences: false) {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.hasPrefix("Example") {
                inside = true
                let rest = line.drop { $0 != ":" }.dropFirst().trimmingCharacters(in: .whitespaces)
                if !rest.isEmpty { out.append(contentsOf: commands(in: rest)) }
                continue
            }
            guard inside else { continue }
            if line.isEmpty || !raw.hasPrefix(" ") { inside = false; continue }
            out.append(contentsOf: commands(in: line))
        }
        return out.filter { $0.contains("modem ") }
    }

    /// One example line without its "# note" or "(note)" tail, cut at `;` into commands.
    static func commands(in line: String) -> [String] {
        var text = line
        if let hash = text.range(of: "  #") ?? text.range(of: " # ") { text = String(text[..<hash.lowerBound]) }
        if let note = text.range(of: "  (") { text = String(text[..<note.lowerBound]) }
        return text.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    static func allExamples() async throws -> [String] {
        var all: [String] = []
        for command in commands {
            let r = try await runProcess("/usr/bin/env", ["COLUMNS=400", try Paths.modem()] + command.split(separator: " ").map(String.init) + ["--help"])
            #expect(r.succeeded, "\(command) --help: \(r)")
            all += examples(r.stdoutText)
        }
        return all
    }

    /// Runs one example in `dir` (where its input files are), through the shell for its redirections,
    /// with `modem` the binary under test.
    static func run(_ example: String, in dir: Scratch) async throws -> ProcessResult {
        let script = "modem() { \"$MODEM\" \"$@\"; }; cd \"$DIR\" && " + example
        return try await runProcess("/usr/bin/env", ["MODEM=\(try Paths.modem())", "DIR=\(dir.path)", "XDG_DATA_HOME=\(dir.file("data"))",
                                                      "/bin/bash", "-c", script],
                                    timeout: 120)
    }

    @Test("every example in a help text runs here or is named with the test that runs it")
    func everyExampleAccountedFor() async throws {
        let all = try await Self.allExamples()
        #expect(all.count >= 25, "only \(all.count) examples found; the extraction broke: \(all)")
        let here = Set(Self.runHere.map(\.example))
        for example in all where !here.contains(example) && Self.elsewhere[example] == nil {
            Issue.record("an example neither run here nor named in HelpExamplesTests.elsewhere: \(example)")
        }
        for example in here.union(Self.elsewhere.keys) where !all.contains(example) {
            Issue.record("HelpExamplesTests names an example no help text shows any more: \(example)")
        }
    }

    /// The examples run on files: each with what must hold after it.
    static let runHere: [(example: String, check: @Sendable (ProcessResult, Scratch) throws -> String?)] = [
        ("echo hello | modem tx --baud 1200 --out hello.wav", { r, d in try wavMade(r, d.file("hello.wav")) }),
        ("modem keys show", { r, _ in r.succeeded && r.stdoutText.contains("smk1") ? nil : "no key shown" }),
        ("modem tx --profile rtty --out rtty.wav message.txt", { r, d in try wavMade(r, d.file("rtty.wav")) }),
        ("modem tx --profile bell202 --framing ax25 --fx25 32 --out fx25.wav frames.txt", { r, d in try wavMade(r, d.file("fx25.wav")) }),
        ("modem tx --profile g3ruh --framing ax25 --il2p 1 --out il2p.wav frames.txt", { r, d in try wavMade(r, d.file("il2p.wav")) }),
        ("modem tx --profile qpsk2400 --v26 mfj --framing ax25 --out qpsk.wav frames.txt", { r, d in try wavMade(r, d.file("qpsk.wav")) }),
        ("modem tx --profile 8psk4800 --framing ax25 --out 8psk.wav frames.txt", { r, d in try wavMade(r, d.file("8psk.wav")) }),
        ("modem tx --profile ofdm --bitrate 160000 --out fast.wav file.bin", { r, d in try wavMade(r, d.file("fast.wav")) }),
        ("modem tx --profile hf --bitrate 2400 --out hf.wav file.bin", { r, d in try wavMade(r, d.file("hf.wav")) }),
        ("modem rx --baud 1200 hello.wav", { r, _ in r.succeeded && r.stdoutText == message ? nil : "not the message" }),
        ("modem rx --profile rtty --channel 1 stereo.wav", { r, _ in
            r.succeeded && r.stdoutText.contains("HELLO FROM THE HELP EXAMPLES") ? nil : "not the message (in Baudot's capitals)" }),
        ("modem rx --profile bell202 --framing ax25 --stats packets.wav", { r, _ in
            r.succeeded && r.stdoutText == frames && r.stderrText.contains("3 frames decoded") ? nil : "not the three frames with their counts" }),
        ("modem rx --profile qpsk2400 --v26 mfj --framing ax25 qpsk.wav", { r, _ in
            r.succeeded && r.stdoutText == frames ? nil : "not the three frames" }),
        ("modem rx --profile 8psk4800 --framing ax25 8psk.wav", { r, _ in
            r.succeeded && r.stdoutText == frames ? nil : "not the three frames" }),
        ("modem rx --profile ofdm fast.wav > file.bin", { r, d in
            r.succeeded && (try? readBytes(d.file("file.bin"))) == payload ? nil : "file.bin is not the payload" }),
        ("modem rx --profile hf hf.wav > file.bin", { r, d in
            r.succeeded && (try? readBytes(d.file("file.bin"))) == payload ? nil : "file.bin is not the payload" }),
        ("modem analyze hello.wav", { r, _ in r.succeeded && r.stdoutText.contains("modem rx --profile bell202") ? nil : "no rx command suggested" }),
        ("modem analyze --png hello.png hello.wav", { r, d in try pngMade(r, d.file("hello.png")) }),
        ("modem analyze --png fast.png fast.wav", { r, d in
            try pngMade(r, d.file("fast.png")) ?? (r.stdoutText.contains("modem rx --profile ofdm") ? nil : "no OFDM rx command") }),
        ("modem impair clean.wav noisy.wav --snr -3", { r, d in try wavMade(r, d.file("noisy.wav")) }),
        ("modem impair clean.wav phone.wav --band 300-3400 --drift -1000 --hum 50:-30 --gain -40", { r, d in try wavMade(r, d.file("phone.wav")) }),
        ("modem impair clean.wav room.wav --snr 24 --band 250-9000 --echo 1.5:0.5 --drift 300", { r, d in try wavMade(r, d.file("room.wav")) }),
        ("modem link-test --mode master-slave --count 200 --size 64", { r, _ in
            r.succeeded && r.stdoutText.contains("exchanges 200: completed 200") ? nil : "not 200 completed" }),
    ]

    static let message = "hello from the help examples\n"
    static let frames = "N0CALL>APRS:first\nN0CALL>APRS:second\nN0CALL>APRS:third\n"
    static let payload = (0..<20_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 8) }

    static func wavMade(_ r: ProcessResult, _ path: String) throws -> String? {
        guard r.succeeded else { return "failed" }
        let b = try readBytes(path)
        return b.count > 44 && Array(b[0..<4]) == Array("RIFF".utf8) ? nil : "\(path) is no WAV"
    }

    static func pngMade(_ r: ProcessResult, _ path: String) throws -> String? {
        guard r.succeeded else { return "failed" }
        let b = try readBytes(path)
        return b.count > 8 && Array(b[1..<4]) == Array("PNG".utf8) ? nil : "\(path) is no PNG"
    }

    /// The files the examples name, made once for every case (seven `modem tx` and two `sox` runs: made
    /// for each of the cases they were about a fifth of this suite's processor time), then copied into
    /// each case's own folder. Removed when the process exits.
    static let inputs = Task<String, any Error> {
        let dir = try Scratch("HelpExamplesInputs")
        let text = try dir.write("message.txt", Self.message)
        try dir.write("frames.txt", Self.frames)
        try dir.write("file.bin", Self.payload)
        try await modemTx(["--baud", "1200"], input: text, out: dir.file("hello.wav"))
        try await modemTx(["--baud", "1200"], input: text, out: dir.file("clean.wav"))
        try await modemTx(["--profile", "bell202", "--framing", "ax25"], input: dir.file("frames.txt"), out: dir.file("packets.wav"))
        try await modemTx(["--profile", "ofdm"], input: dir.file("file.bin"), out: dir.file("fast.wav"))
        try await modemTx(["--profile", "hf", "--bitrate", "2400"], input: dir.file("file.bin"), out: dir.file("hf.wav"))
        try await modemTx(["--profile", "qpsk2400", "--v26", "mfj", "--framing", "ax25"], input: dir.file("frames.txt"), out: dir.file("qpsk.wav"))
        try await modemTx(["--profile", "8psk4800", "--framing", "ax25"], input: dir.file("frames.txt"), out: dir.file("8psk.wav"))
        try await modemTx(["--profile", "rtty"], input: text, out: dir.file("rtty-mono.wav"))
        expectSuccess(try await sox(["-n", "-r", "48000", "-c", "1", "-b", "16", dir.file("silence.wav"), "trim", "0", "1"]))
        expectSuccess(try await sox(["-M", dir.file("silence.wav"), dir.file("rtty-mono.wav"), dir.file("stereo.wav")]))
        // Kept for the process's life (a static), so its folder is removed at exit.
        helpExampleInputs.withLock { $0 = dir }
        atexit { helpExampleInputs.withLock { $0 = nil } }
        return dir.path
    }

    @Test("the examples that need only files run, each doing what it shows", .requires(Peers.sox),
          arguments: 0..<runHere.count)
    func runsHere(_ index: Int) async throws {
        let (example, check) = Self.runHere[index]
        let dir = try Scratch("HelpExamplesTests")
        let inputs = try await Self.inputs.value
        for name in try FileManager.default.contentsOfDirectory(atPath: inputs) {
            try FileManager.default.copyItem(atPath: inputs + "/" + name, toPath: dir.file(name))
        }
        let r = try await Self.run(example, in: dir)
        #expect(!r.timedOut && r.status != 64, "\(example): \(r)")
        if let problem = try check(r, dir) { Issue.record("\(example): \(problem)\n\(r)") }
    }
}

/// The folder of ``HelpExamplesTests/inputs`` while the process runs (set to nil at exit, which removes it).
private let helpExampleInputs = Mutex<Scratch?>(nil)
