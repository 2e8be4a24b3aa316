import ModemCodecs

/// How two ends exchange data: the Communication API's `DeviceCommunicationMode`.
public enum CommunicationMode: String, Sendable, Hashable, CaseIterable {
    /// A request and its reply inside a timeout form one session.
    case masterSlave = "master-slave"
    /// Either side sends at any time; an exchange is one message, done when the peer acknowledges it.
    case duplex
}

/// Where the protocol's timers come from: an audio line or a reliable byte stream.
public enum LinkTiming: Sendable, Hashable {
    /// Derived from the audio line: baud rate, preamble, the receiver's decision delay, latency.
    case audio
    /// A reliable byte stream (Bluetooth RFCOMM, TCP): no preamble and no decision delay, a fixed
    /// acknowledgement timeout in seconds (counted from the moment the writes drained), and a nominal
    /// throughput in bytes per second used for air times and suggested exchange timeouts.
    case byteStream(acknowledgementTimeout: Double, bytesPerSecond: Double)
    /// An audio line carrying the frames in the OFDM modem's LDPC blocks (``ModemLink``'s
    /// `OFDMLinkModem`), at a rate both ends adapt to the line: a fixed acknowledgement timeout in
    /// seconds that covers a turnaround at the slowest rate the link falls back to (counted from the
    /// moment the writes drained), and a nominal throughput in bytes per second for air times.
    case ofdm(acknowledgementTimeout: Double, bytesPerSecond: Double)
    /// An audio line carrying the frames in the HF (SSB channel) modem's transmissions (``ModemLink``'s
    /// `HFLinkModem`), at a rate both ends adapt to the line: a fixed acknowledgement timeout in
    /// seconds that covers the longest transmission the peer may be in the middle of and its answer at
    /// the slowest rate the link falls back to, and a nominal throughput in bytes per second for air times.
    case hf(acknowledgementTimeout: Double, bytesPerSecond: Double)
}

/// Whether an audio link sends its frames under forward error correction (``ModemCodecs/CodedFrame``:
/// Reed-Solomon inside a soft-decision convolutional code), which carries them far below the SNR where
/// plain HDLC frames are lost, at about 2.3 times the air time. A receiver decodes plain and coded
/// frames alike whatever this says, so the two ends need not agree.
public enum LinkFEC: String, Sendable, Hashable, CaseIterable {
    /// Code every frame.
    case on
    /// Never code (plain HDLC, as before coded frames existed).
    case off
    /// Code while the line is noisy: from the start (so the open handshake survives a bad line) until
    /// the frames heard from the peer show a clean line (coded frames with almost no level wrong, or
    /// intact plain frames in a row); back to coding when frames arrive damaged.
    case auto
}

/// Parameters of the channel protocol shared by both ends.
public struct LinkConfiguration: Sendable, Hashable {
    /// Master-slave or duplex.
    public var mode: CommunicationMode
    /// Line rate in baud (Bell 202 tones at 1200; minimodem's default tones for other rates). Not used
    /// for timing when ``timing`` is ``LinkTiming/byteStream(acknowledgementTimeout:bytesPerSecond:)``.
    public var baudRate: Double
    /// Payload bytes per frame (1...``LinkFrame/maximumPayload``, default 1024).
    public var framePayload: Int
    /// The largest message an exchange may carry, in bytes (default 1 MiB); larger data is refused.
    public var maximumMessageSize: Int
    /// Fragments sent before asking for an acknowledgement (default 16).
    public var windowFrames: Int
    /// Unanswered polls after which a sender gives up on a message that no exchange deadline covers.
    public var maximumPolls: Int
    /// Attempts for the cancel and close signals (the Communication API's 3).
    public var signalAttempts: Int
    /// Hellos sent by `open` before it gives up (default 5).
    public var handshakeAttempts: Int
    /// Flags sent before a transmission, in seconds (lets the receiver's clock lock).
    public var preambleSeconds: Double
    /// Extra time a reply may take to come back, in seconds: the audio path's latency both ways
    /// (0 on the in-memory channel; a few hundred ms through a sound server).
    public var latencySeconds: Double
    /// Where the timers come from (default ``LinkTiming/audio``).
    public var timing: LinkTiming
    /// Forward error correction on an audio line (default ``LinkFEC/auto``); timers allow for coded
    /// frames unless it is ``LinkFEC/off``.
    public var forwardErrorCorrection: LinkFEC
    /// Duplex messages the phone keeps on their way at once (default 1: each waits for the
    /// acknowledgement of the one before). With 2, a message whose burst is all sent no longer holds
    /// up the next one: the phone sends it at once, marked ``ModemCodecs/LinkFrame/Flags/follows``,
    /// and the device delivers it after the one before (the wait for an acknowledgement, a round trip,
    /// is spent sending). Only messages of one burst (up to ``windowFrames`` fragments) go ahead of
    /// their acknowledgement. Either end may run without it: a device delivers marked messages in
    /// order whatever its own setting. At least 1.
    public var messagesInFlight = 1

    /// Creates a configuration.
    /// - Parameters:
    ///   - mode: master-slave (default) or duplex.
    ///   - baudRate: line rate in baud, 50...9600 (default 1200).
    ///   - framePayload: payload bytes per frame (default 1024).
    ///   - maximumMessageSize: largest message in bytes (default 1 MiB, at most 16 MiB).
    ///   - windowFrames: fragments per burst (default 16).
    ///   - latencySeconds: audio path latency allowance (default 0).
    ///   - timing: where the timers come from (default: the audio line).
    ///   - forwardErrorCorrection: coded frames on an audio line: auto (default), on or off.
    public init(mode: CommunicationMode = .masterSlave, baudRate: Double = 1200, framePayload: Int = 1024,
                maximumMessageSize: Int = 1 << 20, windowFrames: Int = 16, maximumPolls: Int = 10,
                signalAttempts: Int = 3, handshakeAttempts: Int = 5, preambleSeconds: Double? = nil, latencySeconds: Double = 0,
                timing: LinkTiming = .audio, forwardErrorCorrection: LinkFEC = .auto) {
        precondition(baudRate >= 50 && baudRate <= 9600, "baudRate must be 50...9600, got \(baudRate)")
        precondition((1...LinkFrame.maximumPayload).contains(framePayload), "framePayload must be 1...\(LinkFrame.maximumPayload)")
        precondition(maximumMessageSize >= 0 && maximumMessageSize <= 16 << 20, "maximumMessageSize must be 0...16 MiB")
        precondition(maximumMessageSize / framePayload < 65535, "maximumMessageSize needs fewer than 65535 frames")
        precondition(windowFrames >= 1 && maximumPolls >= 1 && signalAttempts >= 1 && handshakeAttempts >= 1)
        precondition(latencySeconds >= 0 && latencySeconds <= 10, "latencySeconds must be 0...10")
        switch timing {
        case .byteStream(let ack, let rate), .ofdm(let ack, let rate), .hf(let ack, let rate):
            precondition(ack > 0 && ack.isFinite && rate > 0 && rate.isFinite,
                         "byte-stream, OFDM and HF timing need a positive acknowledgement timeout and throughput")
        case .audio: break
        }
        self.mode = mode
        self.baudRate = baudRate
        self.framePayload = framePayload
        self.maximumMessageSize = maximumMessageSize
        self.windowFrames = windowFrames
        self.maximumPolls = maximumPolls
        self.signalAttempts = signalAttempts
        self.handshakeAttempts = handshakeAttempts
        // Twelve flags (80 ms at 1200 baud), at least 40 ms.
        self.preambleSeconds = preambleSeconds ?? max(0.04, 12 * 8 / baudRate)
        self.latencySeconds = latencySeconds
        self.timing = timing
        self.forwardErrorCorrection = forwardErrorCorrection
    }

    /// The channel protocol over a reliable byte stream (Bluetooth RFCOMM, TCP), frames written back
    /// to back (``ModemCodecs/LinkStreamDecoder``): 1024-byte fragments, a window of 16, no preamble,
    /// a 1 s acknowledgement timeout and a nominal 10 kB/s for suggested exchange timeouts. The
    /// stream loses nothing while connected, so the ARQ only has work after a reconnect or junk.
    /// - Parameter mode: master-slave or duplex.
    public static func byteStream(mode: CommunicationMode) -> LinkConfiguration {
        LinkConfiguration(mode: mode, framePayload: 1024, windowFrames: 16, preambleSeconds: 0,
                          timing: .byteStream(acknowledgementTimeout: 1, bytesPerSecond: 10_000))
    }

    /// Air time of a frame with `payload` bytes, in seconds (audio: with stuffing and a separating
    /// flag, or as a coded frame unless FEC is off; byte stream: the frame's bytes at the nominal
    /// throughput).
    public func airtime(payload: Int) -> Double {
        switch timing {
        case .audio:
            let plain = Double(LinkFrame.overhead + 2 + payload + 1) * 8 * 1.02 / baudRate
            guard forwardErrorCorrection != .off else { return plain }
            return Double(CodedFrame.lineLevels(payloadLength: LinkFrame.overhead + 2 + payload) + 24) / baudRate
        case .byteStream(_, let rate): return Double(LinkFrame.overhead + payload) / rate
        // Each frame in a block's record stream: its bytes and a 2-byte length.
        case .ofdm(_, let rate), .hf(_, let rate): return Double(LinkFrame.overhead + 2 + payload) / rate
        }
    }

    /// Whether the frames travel in the OFDM modem's blocks (``LinkTiming/ofdm(acknowledgementTimeout:bytesPerSecond:)``).
    public var usesOFDM: Bool { if case .ofdm = timing { true } else { false } }

    /// Whether the frames travel in the HF modem's transmissions (``LinkTiming/hf(acknowledgementTimeout:bytesPerSecond:)``).
    public var usesHF: Bool { if case .hf = timing { true } else { false } }

    /// How long a sender waits, after its own transmission ended, for an acknowledgement. Audio: the
    /// round trip latency, the receiver's decision delay (256 bit times), a preamble, an ack frame,
    /// margin. Byte stream: the round trip latency and the fixed timeout.
    public var acknowledgementTimeout: Double {
        switch timing {
        case .audio: return 2 * latencySeconds + 256 / baudRate + preambleSeconds + airtime(payload: 64) + 0.25 + 40 / baudRate
        case .byteStream(let timeout, _), .ofdm(let timeout, _), .hf(let timeout, _): return 2 * latencySeconds + timeout
        }
    }

    /// Channel access on a shared line: slots as long as the audio path's latency (at least 100 ms, so a
    /// transmission is heard before the next slot starts), up to 3 slots of random backoff.
    public var sharedMediumAccess: (slotSeconds: Double, maximumSlots: Int) {
        (max(0.1, latencySeconds), 3)
    }

    /// A reasonable exchange timeout for `bytes` each way (master-slave: request and reply), in seconds:
    /// three times the air time plus ten acknowledgement timeouts.
    public func suggestedTimeout(bytes: Int) -> Double {
        let frames = max(1, (bytes + framePayload - 1) / framePayload)
        let oneWay = Double(frames) * airtime(payload: min(bytes, framePayload)) + preambleSeconds
        let ways = mode == .masterSlave ? 2.0 : 1.0
        return 3 * ways * oneWay + 10 * acknowledgementTimeout
    }
}
