#if canImport(Glibc)
import Glibc
#endif
import ModemAudio
import ModemCodecs
import ModemPipelines
import ModemDSP
import ModemRuntime

/// A packet TNC: a packet receiver and transmitter behind a ``KISSServer``, an ``AGWServer`` or both,
/// all in one thread.
///
/// Each ``step(timeoutMilliseconds:)`` polls the network (one wait over both servers' sockets:
/// accepting clients, reading their KISS frames and AGW messages, writing what is queued for them),
/// then reads one block of audio and decodes it, sending every frame to every KISS client as a KISS
/// data frame (port 0) and to the AGW clients that asked for raw (`K`) or monitor (`U`, `I`, `S`)
/// frames, then transmits what clients sent (AGW monitor clients see each transmission as `T`). ``run(shouldStop:)`` loops until asked to stop and ``finish()`` closes the
/// sockets and finishes the output (a WAV file's header is written then).
///
/// - With a file input, reading waits for the first client (``TNCOptions/waitsForFirstClient``),
///   then goes at full speed, ``TNCOptions/blockSeconds`` of audio between polls; at the end of
///   the file the TNC keeps serving (transmitting) until stopped.
/// - Client data frames (port 0, valid AX.25) are queued (at most
///   ``TNCOptions/maximumQueuedFrames``) and modulated with the current TXDELAY and TXTAIL. To a
///   file, they are written at once; to a channel (``TNCOptions/outputIsChannel``), after
///   p-persistent CSMA. KISS parameter frames set TXDELAY, persistence, slot time, TXTAIL and
///   duplex for everyone (there is one radio).
/// - Frames that are not AX.25, on another KISS port, or beyond the queue are rejected and counted;
///   garbage is counted by each client's KISS decoder; neither affects other clients.
public final class TNC {
    /// Tones and baud.
    public let settings: ModemSettings
    /// The audio received.
    public let source: any AudioSource
    /// Where transmitted audio goes (nil: receive only; client frames are rejected).
    public let sink: (any AudioSink)?
    /// The KISS server (nil: AGW only).
    public let server: KISSServer?
    /// The AGW server (nil: KISS only).
    public let agwServer: AGWServer?
    /// How it runs.
    public let options: TNCOptions
    /// The transmit parameters now (clients change them with KISS parameter frames).
    public private(set) var parameters: TNCParameters
    /// Whether the input is being read (after the first client, with ``TNCOptions/waitsForFirstClient``).
    public private(set) var isDecoding: Bool
    /// Whether the input has ended.
    public private(set) var inputEnded = false
    /// Whether ``finish()`` was called.
    public private(set) var isFinished = false

    private let receiver: PacketReceiver
    private var modulator: HDLCModulator?
    private var carrier: CarrierDetector?
    private var access = TNCChannelAccess()
    private var generator: SplitMix64
    var queue: [(bytes: [UInt8], frame: AX25Frame, from: TCPClientInfo)] = []
    /// Blocks a step's network wait, over every server's descriptors at once.
    private let sleeper = SocketWaiter.Sleeper()
    private var pendingAudio: [Float] = []
    private var pendingOffset = 0
    private var block: [Float]
    private var outputBlock: [Float] = []
    private var samplesCaptured = 0
    private var primed = false
    private var readingStarted: Double?
    var statistics = TNCStatistics()
    let onEvent: (TNCEvent) -> Void
    /// Connected mode (AGW clients' links): the data-link station, which AGW client each link
    /// reports to, and whether the station was last told the channel is busy.
    var station: AX25LinkStation
    var linkOwners: [AX25LinkStation.LinkKey: TCPClientInfo] = [:]
    var stationSawBusy = false

    /// Creates a TNC; nothing happens until ``step(timeoutMilliseconds:)`` or ``run(shouldStop:)``.
    /// - Parameters:
    ///   - settings: tones and baud (framing ignored: AX.25).
    ///   - source: the audio to decode (a file or a capture device).
    ///   - sink: where to transmit (a file or a playback device), or nil to receive only. With
    ///     ``TNCOptions/outputIsChannel``, it must run at the source's sample rate.
    ///   - server: a listening KISS server, or nil (the TNC closes it in ``finish()``).
    ///   - agwServer: a listening AGW server, or nil; at least one of the two.
    ///   - options: how to run.
    ///   - onEvent: receives what happens, for a log.
    /// - Throws: ``ModemSettingsError`` when the settings do not fit the source's or the sink's
    ///   sample rate, or a channel output's rate differs from the input's.
    public init(settings: ModemSettings, source: any AudioSource, sink: (any AudioSink)?, server: KISSServer?,
                agwServer: AGWServer? = nil,
                options: TNCOptions = TNCOptions(), onEvent: @escaping (TNCEvent) -> Void = { _ in }) throws {
        options.validate()
        precondition(server != nil || agwServer != nil, "TNC needs a KISS server, an AGW server or both")
        self.agwServer = agwServer
        self.settings = settings
        self.source = source
        self.sink = sink
        self.server = server
        self.options = options
        self.onEvent = onEvent
        parameters = options.parameters
        station = AX25LinkStation(parameters: options.linkParameters)
        isDecoding = !options.waitsForFirstClient
        receiver = try PacketReceiver(settings: settings, sampleRate: source.sampleRate)
        // Baseband (G3RUH) has no tones to listen for: its channel is never seen busy.
        carrier = !settings.isFSK ? nil
            : CarrierDetector(configuration: try settings.configuration(sampleRate: source.sampleRate))
        if let sink {
            if !settings.isFSK {
                throw ModemSettingsError("the TNC transmits AFSK only; \(settings.summary) can be received but not sent")
            }
            if options.outputIsChannel, sink.sampleRate != source.sampleRate {
                throw ModemSettingsError("the output runs at \(sink.sampleRate) Hz and the input at \(source.sampleRate) Hz; a channel output must match its input")
            }
            modulator = try HDLCModulator(settings: settings, sampleRate: sink.sampleRate, amplitude: options.amplitude)
            modulator!.fx25 = options.fx25ParityCount.map { FX25Encoder(parityCount: $0) }
            modulator!.il2p = options.il2pMaximumFEC.map { IL2PEncoder(maximumFEC: $0) }
        }
        generator = SplitMix64(seed: options.randomSeed ?? UInt64.random(in: 0...UInt64.max))
        block = [Float](repeating: 0, count: max(1, Int(options.blockSeconds * Double(source.sampleRate))))
    }

    /// The counts so far.
    public var currentStatistics: TNCStatistics {
        var s = statistics
        if !inputEnded, !isFinished { s.receiver = receiver.currentStatistics }
        let all = [server?.slots, agwServer?.slots].compactMap { $0 }
        s.clientsServed = all.reduce(0) { $0 + $1.clientsServed }
        s.clientsDroppedAsSlow = all.reduce(0) { $0 + $1.clientsDroppedAsSlow }
        s.clientsRefused = all.reduce(0) { $0 + $1.clientsRefused }
        s.clientsDroppedAsIdle = all.reduce(0) { $0 + $1.clientsDroppedAsIdle }
        s.kiss = server?.kissStatistics ?? KISSDecoderStatistics()
        s.agw = agwServer?.agwStatistics
        s.agwClientsServed = agwServer?.clientsServed ?? 0
        s.slotsWaited = access.slotsWaited
        s.busyDeferrals = access.busyDeferrals
        s.audioSeconds = Double(samplesCaptured) / Double(source.sampleRate)
        return s
    }

    /// Frames waiting to be transmitted.
    public var queuedFrames: Int { queue.count }

    /// The connected-mode clock, in seconds: the audio captured so far (a sound card's clock, so the
    /// data link's timers follow the channel, whatever the machine's load).
    var linkClock: Double { Double(samplesCaptured) / Double(source.sampleRate) }

    /// Whether the channel counts as busy for the data link's T1: a carrier heard, a transmission
    /// playing, or frames waiting for their turn.
    var channelBusyForLinks: Bool {
        (carrier?.isBusy ?? false) || pendingOffset < pendingAudio.count || !queue.isEmpty
    }

    /// One round: network, one block of audio, transmissions.
    /// - Parameter timeoutMilliseconds: how long to wait for the network when there is no audio to
    ///   read (default ``TNCOptions/idlePollMilliseconds``); while decoding it does not wait.
    /// - Throws: ``AudioError`` when reading or writing audio fails.
    public func step(timeoutMilliseconds: Int? = nil) throws {
        precondition(!isFinished, "TNC.step after finish")
        let reading = isDecoding && !inputEnded
        var timeout = reading ? 0 : (timeoutMilliseconds ?? options.idlePollMilliseconds)
        if reading, options.pacesInputToRealTime {
            // Ahead of the wall clock (a virtual device): wait on the network instead.
            let now = Self.monotonicSeconds()
            let start = readingStarted ?? now
            readingStarted = start
            let ahead = Double(samplesCaptured) / Double(source.sampleRate) - (now - start)
            if ahead > 0.1 { timeout = min(options.idlePollMilliseconds, Int((ahead - 0.05) * 1000)) }
        }
        pollNetwork(timeoutMilliseconds: timeout)
        var captured = 0
        if isDecoding, !inputEnded { captured = try readBlock() }
        runLinks()
        try transmit(captured: captured)
    }

    /// Ends the current (or the next) network wait of ``step(timeoutMilliseconds:)`` early, from any
    /// thread: what a stop request calls so the TNC's thread sees it at once.
    public var interrupter: @Sendable () -> Void {
        { [sleeper] in sleeper.interrupt() }
    }

    /// Steps until `shouldStop` returns true (polled between steps; ``interrupter`` cuts the wait
    /// for the network short), then ``finish()``es. On an error, finishes too (the output stays valid)
    /// and rethrows.
    /// - Returns: the counts.
    public func run(shouldStop: () -> Bool) throws -> TNCStatistics {
        do {
            while !shouldStop() { try step() }
        } catch {
            _ = try? finish()
            throw error
        }
        return try finish()
    }

    /// Closes the server and every connection, plays out a transmission in progress, and finishes
    /// the output (drains a device, writes a file's header). Frames still waiting for the channel
    /// are dropped (counted as rejected). Calling it again returns the same counts.
    /// - Throws: ``AudioError`` when finishing the output fails.
    @discardableResult
    public func finish() throws -> TNCStatistics {
        guard !isFinished else { return currentStatistics }
        if !inputEnded {
            // Frames the receiver still holds go out before the connections close.
            deliver(receiver.flush())
            statistics.receiver = receiver.finish()
        }
        isFinished = true
        server?.close()
        agwServer?.close()
        for item in queue {
            statistics.framesRejected += 1
            onEvent(.rejected(from: item.from, reason: "stopped before the channel was free"))
        }
        queue.removeAll()
        if let sink {
            if pendingOffset < pendingAudio.count {
                try pendingAudio[pendingOffset...].withUnsafeBufferPointer { try sink.write($0) }
                pendingOffset = pendingAudio.count
            }
            try sink.finish()
        }
        return currentStatistics
    }

    static func monotonicSeconds() -> Double { SystemTime.monotonicSeconds() }

    // MARK: - Network

    /// One wait over every server's descriptors, then what each server made of them.
    private func pollNetwork(timeoutMilliseconds: Int) {
        let servers = [server?.slots, agwServer?.slots].compactMap { $0 }
        var results = sleeper.wait(servicing: servers, timeoutMilliseconds: timeoutMilliseconds)[...]
        if let server {
            for event in server.handle(results.removeFirst()) { handle(event) }
        }
        if let agwServer {
            let events = agwServer.handle(results.removeFirst()) { command, client in handle(command, from: client) }
            for event in events { handle(event) }
        }
    }

    func clientArrived(_ client: TCPClientInfo, clients: Int) {
        onEvent(.clientConnected(client, clients: clients))
        if !isDecoding {
            isDecoding = true
            onEvent(.decodingStarted)
        }
    }

    private func handle(_ event: KISSServerEvent) {
        switch event {
        case .connected(let client):
            clientArrived(client, clients: server?.connectedClients.count ?? 0)
        case .refused(let peer, let clients):
            onEvent(.clientRefused(peer: peer, clients: clients))
        case .firstGarbage(let client, let s):
            onEvent(.clientGarbage(client, statistics: s))
        case .disconnected(let client, let reason, let s):
            onEvent(.clientLeft(client, reason: reason, statistics: s, clients: server?.connectedClients.count ?? 0))
        case .frame(let frame, let client):
            handle(frame, from: client)
        }
    }

    private func handle(_ frame: KISSFrame, from client: KISSClientInfo) {
        switch frame.command {
        case .dataFrame:
            guard frame.port == 0 else {
                return reject(client, "KISS port \(frame.port): this TNC has one radio channel, port 0")
            }
            guard let ax25 = try? AX25Frame(decoding: frame.payload) else {
                return reject(client, "not an AX.25 frame (\(frame.payload.count) bytes)")
            }
            enqueue(ax25, bytes: frame.payload, from: client)
        case .txDelay, .persistence, .slotTime, .txTail, .fullDuplex:
            if let change = parameters.apply(frame) {
                statistics.parametersSet += 1
                onEvent(.parameterSet(from: client, change: change))
            } else {
                onEvent(.ignored(from: client, command: frame.command))
            }
        case .setHardware, .exitKISS:
            onEvent(.ignored(from: client, command: frame.command))
        }
    }

    /// Queues a client's frame for the transmitter, or rejects it (no output, queue full).
    func enqueue(_ frame: AX25Frame, bytes: [UInt8], from client: TCPClientInfo) {
        guard sink != nil else { return reject(client, "this TNC has no output to transmit to") }
        guard queue.count < options.maximumQueuedFrames else {
            return reject(client, "the transmit queue is full (\(queue.count) frames waiting)")
        }
        queue.append((bytes, frame, client))
    }

    func reject(_ client: TCPClientInfo, _ reason: String) {
        statistics.framesRejected += 1
        onEvent(.rejected(from: client, reason: reason))
    }

    // MARK: - Audio

    /// Reads and decodes one block; returns the samples read (0 at the end of the input).
    private func readBlock() throws -> Int {
        let n = try block.withUnsafeMutableBufferPointer { try source.read(into: $0) }
        if n == 0 {
            inputEnded = true
            // The demodulator looks a few bits ahead: a frame that ends with the file would stay
            // inside it. Silence after the end lets it out, as a radio going quiet would.
            let tail = [Float](repeating: 0, count: max(Int(Double(source.sampleRate) * 0.1),
                                                        Int(64 * Double(source.sampleRate) / settings.baudRate)))
            deliver(tail.withUnsafeBufferPointer { receiver.process($0) })
            deliver(receiver.flush())
            statistics.receiver = receiver.finish()
            onEvent(.inputEnded(statistics.receiver))
            return 0
        }
        samplesCaptured += n
        let packets = block.withUnsafeBufferPointer { whole -> [ReceivedPacket] in
            let samples = UnsafeBufferPointer(rebasing: whole[0..<n])
            if options.outputIsChannel { carrier?.process(samples) }
            return receiver.process(samples)
        }
        deliver(packets)
        return n
    }

    /// Sends decoded frames to every client.
    private func deliver(_ packets: [ReceivedPacket]) {
        for packet in packets {
            var clients = server?.broadcast(.data(packet.bytes)) ?? 0
            if let agwServer, let frame = try? AX25Frame(decoding: packet.bytes, strictCallsigns: false) {
                clients += agwServer.deliverReceived(frame, bytes: packet.bytes)
            }
            statistics.framesToClients += clients
            onEvent(.received(packet, clients: clients))
            if !station.links.isEmpty || !station.registered.isEmpty {
                perform(station.received(packet.bytes, now: linkClock))
            }
        }
    }

    private func transmitted(_ frame: AX25Frame, from client: TCPClientInfo) {
        statistics.framesTransmitted += 1
        agwServer?.monitorTransmitted(frame)
        onEvent(.transmitted(monitorLine: frame.monitorLine(), from: client))
    }

    private func modulate(_ bytes: [UInt8], gapSeconds: Double) -> [Float] {
        var samples: [Float] = []
        let m = modulator!
        modulator!.append(frames: [bytes], leadingFlags: m.flags(milliseconds: parameters.txDelayMilliseconds, minimum: 1),
                          trailingFlags: m.flags(milliseconds: parameters.txTailMilliseconds, minimum: 3),
                          gapSeconds: gapSeconds, to: &samples)
        return samples
    }

    private func transmit(captured: Int) throws {
        guard let sink, modulator != nil else { return }
        if !options.outputIsChannel || inputEnded {
            // A file (or a channel whose input ended): each frame at once, no channel access.
            while !queue.isEmpty {
                let item = queue.removeFirst()
                let samples = modulate(item.bytes, gapSeconds: options.gapSeconds)
                try samples.withUnsafeBufferPointer { try sink.write($0) }
                transmitted(item.frame, from: item.from)
            }
            return
        }
        // A channel: as many samples out as came in, transmissions after CSMA, silence otherwise.
        guard captured > 0 else { return }
        if !primed {
            // A little silence first, so the device has some margin against underruns.
            primed = true
            let margin = [Float](repeating: 0, count: sink.sampleRate / 20)
            try margin.withUnsafeBufferPointer { try sink.write($0) }
        }
        if pendingOffset >= pendingAudio.count, !queue.isEmpty {
            let action = access.decide(now: samplesCaptured, channelBusy: carrier?.isBusy ?? false, parameters: parameters,
                                       sampleRate: source.sampleRate, using: &generator)
            if action == .transmit {
                access.reset()
                let item = queue.removeFirst()
                pendingAudio = modulate(item.bytes, gapSeconds: 0)
                pendingOffset = 0
                transmitted(item.frame, from: item.from)
            }
        }
        if outputBlock.count != captured { outputBlock = [Float](repeating: 0, count: captured) }
        let take = min(captured, pendingAudio.count - pendingOffset)
        outputBlock.withUnsafeMutableBufferPointer { out in
            for i in 0..<take { out[i] = pendingAudio[pendingOffset + i] }
            for i in take..<captured { out[i] = 0 }
        }
        pendingOffset += take
        if pendingOffset >= pendingAudio.count, !pendingAudio.isEmpty {
            pendingAudio.removeAll()
            pendingOffset = 0
        }
        try outputBlock.withUnsafeBufferPointer { try sink.write($0) }
    }
}
