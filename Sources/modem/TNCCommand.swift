#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import ModemAudio
import SwiftModem

/// `--profile` of `modem tnc`: the tone plans at packet radio's rates (100 baud and up), listed
/// by `--help`. (RTTY's 45.45 baud, V.23's 75 baud back channel and OFDM carry no AX.25 here.)
enum TNCProfileArgument: String, CaseIterable, ExpressibleByArgument {
    case bell202, hf300, g3ruh, bell103, bell103Answer = "bell103-answer", v21, v21Answer = "v21-answer", v23

    /// Accepts any case, as `--profile` of `tx` and `rx` does.
    init?(argument: String) { self.init(rawValue: argument.lowercased()) }

    /// The profile's name for ``ModemSettings``.
    var name: String { rawValue }
}

/// `modem tnc`: a TNC serving KISS over TCP (Dire Wolf's port 8001 protocol), the AGW packet-engine
/// interface (its port 8000) or both. All logic is in `SwiftModem.TNC`, `SwiftModem.KISSServer` and
/// `SwiftModem.AGWServer`.
struct TNCCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tnc",
        abstract: "A packet radio TNC: serves KISS over TCP (as Dire Wolf's port 8001) and the AGW interface (its port 8000) for a WAV file or a sound device.",
        discussion: helpText("""
        Every AX.25 frame decoded from the input goes to every connected KISS client as a KISS data \
        frame (port 0); data frames that clients send are modulated to --output (a WAV file) or played \
        on --device. Clients may set TXDELAY (preamble, 10 ms units), TXTAIL, persistence, slot time \
        and full duplex with KISS parameter frames. Persistence and slot time (p-persistent CSMA, \
        waiting while the receiver hears a carrier) apply when transmitting on a device; a file is \
        not a shared channel, so frames are written to it at once.

        With --agw, AGW clients (Xastir, YAAC, AGWterminal, Dire Wolf's aclients) are served as Dire \
        Wolf 1.8 serves them: version (R), ports (G, one: Port1), capabilities (g), callsign \
        registration (X, x), monitor frames (m: U, I, S for frames heard, T for frames sent), raw \
        frames (k, K both ways), UI frames to send (M, V with a digipeater path) and the transmit \
        queue's length (y). Connected mode (C, v, c) is not available yet: a connect request is \
        answered at once with Dire Wolf's failed-connection notice (d, "*** DISCONNECTED RETRYOUT").

        With --input, decoding starts when the first client connects and runs at full speed; at the \
        end of the file the TNC keeps serving (transmitting) until SIGINT or SIGTERM. With --device, \
        capture runs continuously. SIGINT or SIGTERM closes the connections, finishes --output (a \
        valid WAV file) and exits 0.

        Clients, frames and counts are logged on standard error (--quiet silences them). A client \
        that sends garbage or disconnects affects no other; garbage is counted and ignored; a client \
        that reads too slowly is dropped with a message.

        Examples:
          modem tnc --input packets.wav --output sent.wav --kiss-port 8001
          modem tnc --device default --kiss-port 8001
          modem tnc --device default --agw            (AGW on port 8000)
          modem tnc --device default --kiss-port 0 --agw 0
          kissutil -p 8001            (Dire Wolf's KISS client, in another terminal)
        """)
    )

    @Option(name: .long, help: ArgumentHelp("Receive from (and transmit on) an ALSA device (see `modem devices`).", valueName: "NAME"))
    var device: String?

    @Option(name: .long, help: ArgumentHelp("Decode a WAV (or other audio) file.", valueName: "IN.wav"))
    var input: String?

    @Option(name: .long, help: ArgumentHelp("Write what clients send to a WAV file (with --device: instead of playing it).", valueName: "OUT.wav"))
    var output: String?

    @Option(name: .customLong("kiss-port"), parsing: .unconditional, help: ArgumentHelp("TCP port of the KISS server (Dire Wolf uses 8001); 0 picks a free one, printed on standard error.", valueName: "P"))
    var kissPort: Int?

    @Option(name: .customLong("agw"), defaultAsFlag: 8000, parsing: .next, help: ArgumentHelp("Serve the AGW interface, on TCP port P (default 8000, as Dire Wolf); 0 picks a free one, printed on standard error. At least one of --kiss-port and --agw.", valueName: "P"))
    var agwPort: Int?

    @Option(name: .long, help: ArgumentHelp("Address to listen on: 127.0.0.1 (this machine only), 0.0.0.0 or :: (all interfaces).", valueName: "ADDR"))
    var bind: String = "127.0.0.1"

    @Option(name: .long, help: ArgumentHelp("A tone plan that carries AX.25: bell202 (1200 baud AFSK, default), hf300 (300 baud HF), g3ruh (9600 baseband, receive only), or the 300 and 1200 baud telephone plans (bell103, v21, v23 and their answer sides).", valueName: "P"))
    var profile: TNCProfileArgument = .bell202

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("Baud rate, overrides the profile's.", valueName: "N"))
    var baud: Double?

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("Mark frequency, overrides the profile's.", valueName: "HZ"))
    var mark: Double?

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("Space frequency, overrides the profile's.", valueName: "HZ"))
    var space: Double?

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("Sample rate of --output (default: the input's) and of --device (default 48000).", valueName: "HZ"))
    var rate: Int?

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("Channel of a multi-channel input file, counted from 0.", valueName: "N"))
    var channel: Int = 0

    @Option(name: .long, help: ArgumentHelp("Sample format of --output.", valueName: "FMT"))
    var format: SampleFormatArgument = .s16

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("Peak level of transmitted audio in dBFS (-60...0).", valueName: "DB"))
    var level: Double = -3

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("Initial TXDELAY, in 10 ms units (0...255); clients may change it.", valueName: "N"))
    var txdelay: Int = 30

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("Initial TXTAIL, in 10 ms units (0...255).", valueName: "N"))
    var txtail: Int = 10

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("Initial persistence p (0...255: chance (p+1)/256 per slot).", valueName: "N"))
    var persist: Int = 63

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("Initial slot time, in 10 ms units (0...255).", valueName: "N"))
    var slottime: Int = 10

    @Flag(name: .customLong("full-duplex"), help: "Transmit at once on --device, without waiting for a clear channel.")
    var fullDuplex = false

    @Option(name: .customLong("max-clients"), parsing: .unconditional, help: ArgumentHelp("KISS clients served at once (1...1000). When all are taken, a new client replaces one idle for 5 s or more.", valueName: "N"))
    var maxClients: Int = 16

    @Option(name: .customLong("idle-timeout"), parsing: .unconditional, help: ArgumentHelp("Disconnect a client after this many seconds without traffic either way (0: never).", valueName: "SECONDS"))
    var idleTimeout: Double = 600

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("Send client frames as FX.25 with 16, 32 or 64 Reed-Solomon check bytes (received frames: FX.25, IL2P and plain AX.25 always).", valueName: "N"))
    var fx25: Int?

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("Send client frames as IL2P, like Dire Wolf's -I N: 1 gives every payload block 16 Reed-Solomon check bytes, 0 gives 2-8 by block size (received frames: IL2P, FX.25 and plain AX.25 always). Not with --fx25.", valueName: "N"))
    var il2p: Int?

    @Flag(name: [.short, .long], help: "No diagnostics on standard error.")
    var quiet = false

    func validate() throws {
        if (input == nil) == (device == nil) { throw ValidationError("give exactly one of --input IN.wav or --device NAME") }
        guard kissPort != nil || agwPort != nil else { throw ValidationError("give --kiss-port P (KISS), --agw [P] (AGW) or both") }
        if let kissPort, !(0...65535).contains(kissPort) { throw ValidationError("--kiss-port \(kissPort) is not a TCP port (1...65535, or 0 for any free port)") }
        if let agwPort, !(0...65535).contains(agwPort) { throw ValidationError("--agw \(agwPort) is not a TCP port (1...65535, or 0 for any free port)") }
        if let kissPort, let agwPort, kissPort == agwPort, kissPort != 0 { throw ValidationError("--kiss-port and --agw cannot share port \(kissPort)") }
        if let rate { guard (8000...192_000).contains(rate) else { throw ValidationError("--rate \(rate) is outside 8000...192000 Hz") } }
        guard channel >= 0 else { throw ValidationError("--channel must be 0 or more") }
        guard (-60...0).contains(level) else { throw ValidationError("--level \(level) is outside -60...0 dBFS") }
        for (name, value) in [("--txdelay", txdelay), ("--txtail", txtail), ("--persist", persist), ("--slottime", slottime)] {
            guard (0...255).contains(value) else { throw ValidationError("\(name) \(value) is outside 0...255") }
        }
        if let fx25, !FX25Mode.parityCounts.contains(fx25) { throw ValidationError("--fx25 takes 16, 32 or 64 check bytes, not \(fx25)") }
        if let il2p {
            guard il2p == 0 || il2p == 1 else { throw ValidationError("--il2p takes 1 (16 check bytes per block) or 0 (2-8 by block size), not \(il2p)") }
            guard fx25 == nil else { throw ValidationError("--il2p and --fx25 cannot go together: a frame goes as one or the other") }
        }
        guard (1...1000).contains(maxClients) else { throw ValidationError("--max-clients must be 1...1000") }
        guard idleTimeout >= 0, idleTimeout <= maximumSeconds else { throw ValidationError("--idle-timeout must be 0...\(Int(maximumSeconds)) seconds (0: never)") }
        guard !bind.isEmpty else { throw ValidationError("--bind needs an address, e.g. 127.0.0.1") }
        _ = try settings()
    }

    func settings() throws -> ModemSettings {
        do {
            return try ModemSettings(profile: profile.name, baudRate: baud, mark: mark, space: space, framing: "ax25")
        } catch let e as ModemSettingsError {
            throw ValidationError(e.description)
        }
    }

    func run() async throws {
        let settings = try settings()
        try await reportingErrors {
            if let output { try checkOutput(output, option: "--output", notSameAs: input.map { [$0] } ?? []) }
            installStopHandlers()
            let log: (String) -> Void = { line in if !quiet { printError("modem tnc: \(line)") } }
            // The input first (a missing file is the likeliest mistake), then the port, then the output.
            let source: any AudioSource
            if let input {
                source = try AudioFileReader(path: input, channel: channel,
                                             interruptionCheck: { isStopRequested })
            } else {
                source = try ALSACapture(device: device!, sampleRate: rate ?? 48000)
            }
            guard supportedSampleRates.contains(source.sampleRate) else {
                throw CLIError("\(input ?? device!): sample rate \(source.sampleRate) Hz is outside the \(supportedSampleRates.lowerBound)...\(supportedSampleRates.upperBound) Hz that can be decoded")
            }
            do {
                _ = try settings.configuration(sampleRate: source.sampleRate)
            } catch let e as ModemSettingsError where settings.isFSK {
                throw UsageError("\(input ?? device!): \(e.description)")
            }
            let server: KISSServer?
            let agwServer: AGWServer?
            do {
                server = try kissPort.map {
                    try KISSServer(host: bind, port: $0, maximumClients: maxClients,
                                   idleTimeoutSeconds: idleTimeout > 0 ? idleTimeout : nil)
                }
                agwServer = try agwPort.map {
                    try AGWServer(host: bind, port: $0, maximumClients: maxClients,
                                  idleTimeoutSeconds: idleTimeout > 0 ? idleTimeout : nil)
                }
            } catch {
                throw CLIError("\(error)")
            }
            var options = TNCOptions()
            options.waitsForFirstClient = input != nil
            options.pacesInputToRealTime = device != nil
            options.amplitude = Float(pow(10, level / 20))
            options.fx25ParityCount = fx25
            options.il2pMaximumFEC = il2p.map { $0 == 1 }
            options.parameters = TNCParameters(txDelay: txdelay, persistence: persist, slotTime: slottime,
                                               txTail: txtail, fullDuplex: fullDuplex)
            let sink: (any AudioSink)?
            if let output {
                sink = try AudioFileWriter(path: output, sampleRate: rate ?? source.sampleRate,
                                           format: format.sampleFormat)
            } else if let device {
                sink = try ALSAPlayback(device: device, sampleRate: source.sampleRate)
                options.outputIsChannel = true
            } else {
                sink = nil
            }
            let tnc = try TNC(settings: settings, source: source, sink: sink, server: server, agwServer: agwServer,
                              options: options, onEvent: { log($0.description) })
            let listening = [server.map { "KISS over TCP on \($0.address)" }, agwServer.map { "AGW on \($0.address)" }]
                .compactMap { $0 }.joined(separator: "; ")
            if quiet, kissPort == 0 || agwPort == 0 { printError("modem tnc: \(listening)") }
            log("\(listening); \(settings.summary); input \(input ?? "device " + device!) at \(source.sampleRate) Hz; "
                + "output \(output ?? (device.map { "device " + $0 } ?? "none (receive only)"))"
                + (input != nil ? "; decoding starts when the first client connects" : ""))
            // A stop ends the wait for the network at once (the loop checks the flag between steps).
            let wake = tnc.interrupter
            let watch = onStop { wake() }
            defer { watch.cancel() }
            let stats = try tnc.run(shouldStop: { isStopRequested })
            log("stopped: \(stats)")
            if let capture = source as? ALSACapture, capture.xrunCount > 0 {
                log("\(capture.xrunCount) capture overrun(s) recovered")
            }
            if let playback = sink as? ALSAPlayback, playback.xrunCount > 0 {
                log("\(playback.xrunCount) playback underrun(s) recovered")
            }
        }
    }
}
