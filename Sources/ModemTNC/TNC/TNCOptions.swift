import ModemCodecs

/// How a ``TNC`` runs.
public struct TNCOptions: Sendable {
    /// Whether reading the input waits for the first client to connect (default true: with a file
    /// input, nobody would see the frames otherwise). A capture device should start at once.
    public var waitsForFirstClient = true
    /// Audio read per step while decoding, in seconds (0.001...1, default 0.1): the longest the
    /// network waits while a file is decoded at full speed.
    public var blockSeconds = 0.1
    /// Whether the output is the channel the input listens to (a sound device keying a radio).
    /// Then transmissions honour p-persistent CSMA (TXDELAY, persistence, slot time; busy = the
    /// receiver hears a carrier, ``CarrierDetector``), and audio is written in step with the
    /// capture (silence when idle), so the device never runs dry. Otherwise (a file) each frame is
    /// written as soon as it arrives, TXDELAY and TXTAIL shape it, and persistence and slot time do
    /// not apply: a file is not a shared channel.
    public var outputIsChannel = false
    /// Peak level of transmitted audio, 0 < a <= 1 (default 0.7, about -3 dBFS).
    public var amplitude: Float = 0.7
    /// Silence after each transmission written to a file, seconds (0...10, default 0.2).
    public var gapSeconds = 0.2
    /// Client frames waiting to be transmitted, at most (1...10000, default 64); more are rejected.
    public var maximumQueuedFrames = 64
    /// The transmit parameters until a client changes them.
    public var parameters = TNCParameters()
    /// How long a step waits for the network when there is no audio to process, in milliseconds
    /// (1...1000, default 100): the longest a stop request waits.
    public var idlePollMilliseconds = 100
    /// Send client frames as FX.25 with this many Reed-Solomon check bytes (16, 32 or 64; nil: plain
    /// AX.25). Reception decodes FX.25 and plain AX.25 either way.
    public var fx25ParityCount: Int?
    /// Send client frames as IL2P (nil: not): true gives every payload block 16 check bytes (Dire Wolf's
    /// `-I 1`, the NinoTNC's choice), false 2-8 by block size (`-I 0`). Not with ``fx25ParityCount``.
    /// Reception decodes IL2P, FX.25 and plain AX.25 either way.
    public var il2pMaximumFEC: Bool?
    /// The connected-mode data link's parameters for AGW clients' links (`C`, `v`, `c` and incoming
    /// connections to their registered calls): window, N1, T1, N2, AX.25 2.2 or 2.0 first.
    public var linkParameters = AX25LinkParameters()
    /// Seed for the persistence draws (nil: a random seed).
    public var randomSeed: UInt64?
    /// Whether reading is held to real time: when the input delivers audio faster than the wall
    /// clock (a virtual device such as ALSA's `null`), steps wait for the network instead of
    /// reading ahead. Real sound devices pace themselves; a file is read at full speed (false).
    public var pacesInputToRealTime = false

    /// Creates the default options.
    public init() {}

    func validate() {
        precondition((0.001...1).contains(blockSeconds), "TNCOptions blockSeconds must be 0.001...1, got \(blockSeconds)")
        precondition(amplitude > 0 && amplitude <= 1, "TNCOptions amplitude must be in 0 < a <= 1, got \(amplitude)")
        precondition(fx25ParityCount.map { FX25Mode.parityCounts.contains($0) } ?? true, "TNCOptions fx25ParityCount must be 16, 32 or 64, got \(fx25ParityCount ?? 0)")
        precondition(fx25ParityCount == nil || il2pMaximumFEC == nil, "TNCOptions: FX.25 or IL2P, not both")
        precondition((0...10).contains(gapSeconds), "TNCOptions gapSeconds must be 0...10, got \(gapSeconds)")
        precondition((1...10000).contains(maximumQueuedFrames), "TNCOptions maximumQueuedFrames must be 1...10000, got \(maximumQueuedFrames)")
        precondition((1...1000).contains(idlePollMilliseconds), "TNCOptions idlePollMilliseconds must be 1...1000, got \(idlePollMilliseconds)")
    }
}
