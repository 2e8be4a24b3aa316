import ArgumentParser
import Foundation
import ModemAudio
import ModemLink
import ModemMessaging

/// `modem pair`: pairing by sound on one sound device (docs/messaging-plan.md section 4).
struct PairCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pair",
        abstract: "Pair with another installation by sound: exchange and trust each other's keys.",
        discussion: helpText("""
        One end runs with --announce and plays a short token that commits to its key; the other end
        listens, answers, and both check each other. Both then trust the other's key and print one line
        'paired CODE' on standard output with the same 6-digit code (compare them). The key is trusted
        under the name the peer gave (--name) unless another key already has that name (then
        paired-CODE); a key trusted before keeps its name. Both ends may share
        one line and hear themselves (a sound server's null sink).
        Exit status: 0 paired; 1 an error here (the keys, the sound device); 3 no pairing: 'no pairing
        heard' (or not completed) after --seconds, or 'ambiguous, pair again' (two pairings heard at
        once: nothing is trusted); 64 bad options; 130/143 interrupted.
        Example:
          modem pair --device default            # on one machine
          modem pair --device default --announce # on the other
        """)
    )

    @Option(help: ArgumentHelp("ALSA device to play on and record from.", valueName: "NAME")) var device: String
    @Flag(help: "Play the token (the other end listens).") var announce = false
    @Option(parsing: .unconditional, help: ArgumentHelp("Give up after this many seconds (default 10).", valueName: "S")) var seconds: Double = 10
    @Option(help: ArgumentHelp("The keys folder (default under the user's data folder).", valueName: "DIR")) var keys: String?
    @Option(help: ArgumentHelp("The user name given to the peer (letters, digits, . _ -; at most 64).", valueName: "USER"))
    var name: String?
    /// 2400 by default: through a sound server (0.1...0.3 s each way) a pairing takes about 2 s at 2400 baud
    /// and 3.3 s at 1200 (measured on the null sink), and at 1200 one lost message pushes the
    /// announcer past the 5 s the issue allows. Use 1200 (Bell 202) for pairing through the air.
    @Option(parsing: .unconditional, help: ArgumentHelp("Line rate in baud (300...4800; 2400 by default; 1200 = Bell 202 tones, for pairing through the air).",
                               valueName: "N")) var baud: Double = 2400
    @Option(parsing: .unconditional, help: ArgumentHelp("Sound device buffer, milliseconds.", valueName: "MS")) var latencyMs: Int = 150
    @Option(parsing: .unconditional, help: ArgumentHelp("Silence played first, milliseconds (keeps the playback ahead of the capture).", valueName: "MS"))
    var prerollMs: Int = 80
    @Flag(help: "Log each message heard and played, with the line's clock, on standard error.") var verbose = false

    static let sampleRate = 48000

    func validate() throws {
        guard seconds.isFinite, seconds > 0, seconds <= 3600 else { throw ValidationError("--seconds must be 0 < s <= 3600") }
        guard baud.isFinite, (300...4800).contains(baud) else { throw ValidationError("--baud must be 300...4800") }
        guard (10...1000).contains(latencyMs) else { throw ValidationError("--latency-ms must be 10...1000") }
        guard (0...1000).contains(prerollMs) else { throw ValidationError("--preroll-ms must be 0...1000") }
        guard !device.isEmpty else { throw ValidationError("--device must name a sound device") }
        if let name {
            let ok = !name.isEmpty && name.utf8.count <= 64 && name.unicodeScalars.allSatisfy {
                ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) || $0 == "." || $0 == "_" || $0 == "-"
            }
            guard ok else { throw ValidationError("--name must be 1...64 of letters, digits, '.', '_', '-'") }
        }
    }

    func run() throws {
        installStopHandlers()
        let status: Int32
        do {
            status = try pair()
        } catch let e as ExitCode {
            throw e
        } catch _ where isStopRequested {
            printError("modem pair: interrupted")
            throw ExitCode(interruptedStatus)
        } catch {
            printError("modem pair: \(error)")
            throw ExitCode(1)
        }
        if status != 0 { throw ExitCode(status) }
    }

    private func pair() throws -> Int32 {
        let runStart = ContinuousClock.now
        let store = try KeyStore(folder: keys)
        let identity = try store.identity()
        let latencySeconds = 0.3
        let config = LinkConfiguration(mode: .duplex, baudRate: baud, framePayload: 256, latencySeconds: latencySeconds)
        var random = SystemRandomNumberGenerator()
        var machine = PairingStateMachine(role: announce ? .announcer : .listener, privateKey: identity, name: name,
                                          seconds: seconds, timing: .audio(baud: baud, latencySeconds: latencySeconds), random: &random)
        let line = try SharedLineFrameLine(configuration: config, sampleRate: Self.sampleRate, seed: random.next(),
                                           slotSeconds: 0.1, maximumSlots: 1)
        // Capture first, so the token we play is in what we record (and the listener hears from the start).
        let capture = try ALSACapture(device: device, sampleRate: Self.sampleRate, latencyMilliseconds: latencyMs)
        let playback = try ALSAPlayback(device: device, sampleRate: Self.sampleRate, latencyMilliseconds: latencyMs)
        let driver = SharedLineDriver(line: line, sink: playback, source: capture, prerollSeconds: Double(prerollMs) / 1000)
        var started = false
        let wallStart = runStart
        func log(_ what: String, _ bytes: [UInt8], _ now: Double) {
            guard verbose else { return }
            let kind = bytes.count > 1 ? String(UnicodeScalar(bytes[1])) : "?"
            let wall = (ContinuousClock.now - wallStart) / .seconds(1)
            printError(String(format: "modem pair: wall %.2f s (line %.2f s): %@ %@ (%d bytes)", wall, now, what, kind, bytes.count))
        }
        if verbose { printError(String(format: "modem pair: devices open %.2f s after start", (ContinuousClock.now - runStart) / .seconds(1))) }
        var outcome: [PairingAction] = []
        // The machine runs on the wall clock (its deadline is --seconds of real time, even when the sound
        // server falls behind); the line's own backoff runs on the sample clock.
        try driver.run(shouldStop: { isStopRequested }) { input, lineNow in
            let now = (ContinuousClock.now - runStart) / .seconds(1)
            var actions: [PairingAction]
            switch input {
            case .tick:
                if !started {
                    started = true
                    actions = machine.start(now: now)
                } else {
                    actions = machine.tick(now: now)
                }
            case .heard(let bytes):
                log("heard", bytes, lineNow)
                actions = machine.frameHeard(bytes, now: now)
            case .transmitted:
                if verbose { printError(String(format: "modem pair: wall %.2f s (line %.2f s): transmission ended", now, lineNow)) }
                actions = machine.transmitted(now: now)
            }
            var commands: [SharedLineCommand] = []
            for a in actions {
                switch a {
                case .play(let b):
                    log("play", b, lineNow)
                    commands.append(.send(b))
                case .cancelQueued: commands.append(.cancelQueued)
                case .trust, .paired, .failed: outcome.append(a)
                }
            }
            if machine.isFinished { commands.append(.stop) }
            return commands
        }
        if verbose {
            printError("modem pair: xruns: capture \(capture.xrunCount), playback \(playback.xrunCount)")
        }
        if isStopRequested {
            printError("modem pair: interrupted")
            return interruptedStatus
        }
        var status: Int32 = 1
        let pairedCode = outcome.lazy.compactMap { if case .paired(let c) = $0 { return c } else { return nil } }.first
        for a in outcome {
            switch a {
            case .trust(_, let key):
                // The local name: a key trusted already keeps its name; else the peer's claimed name
                // when no other key holds it; else paired-CODE. A peer never takes another key's name.
                let claimed = machine.peerUserName
                let local = try store.trustPaired(claimedName: claimed, publicKey: key, fallback: "paired-\(pairedCode ?? "peer")")
                let identity = PeerIdentity(publicKey: key, trustedName: local, claimedName: claimed)
                printError("modem pair: trusted \(printable(identity.description))")
            case .paired(let code):
                try printOutput("paired \(code)")
                status = 0
            case .failed(let f):
                printError(f.description)
                status = connectionFailedStatus  // none heard, or two at once: no pairing was made
            default: break
            }
        }
        return status
    }
}

