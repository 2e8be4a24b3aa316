import ModemRuntime
/// The time and frequency grid of one kind of OFDM symbol at 48 kHz: the transform size, the
/// cyclic prefix, the band of carriers used and where the pilots sit.
///
/// Carrier k (a bin of the `fftSize`-point transform) is at `k · 48000 / fftSize` Hz. Carriers
/// `firstCarrier...lastCarrier` are used; every `pilotSpacing`-th of them, counted from the first
/// (and the last one as well), carries a known BPSK pilot for tracking phase and timing, the rest carry data.
public struct OFDMNumerology: Sendable, Hashable, Codable {
    /// The sample rate every OFDM signal is made at, in Hz.
    public static let sampleRate = 48000.0

    /// Samples per transform (a power of two, 256...32768; above 4096 only for the room grid).
    public let fftSize: Int
    /// Cyclic-prefix samples before each symbol (0...fftSize/2): longer than the line's echoes.
    public let cyclicPrefix: Int
    /// The lowest and highest carrier used (bins, 1...fftSize/2 − 1).
    public let firstCarrier: Int
    public let lastCarrier: Int
    /// Every n-th used carrier is a pilot (2...64).
    public let pilotSpacing: Int

    /// Creates a grid.
    /// - Precondition: the values are in the ranges documented on the properties.
    public init(fftSize: Int, cyclicPrefix: Int, firstCarrier: Int, lastCarrier: Int, pilotSpacing: Int) {
        precondition(fftSize >= 256 && fftSize <= 32768 && fftSize & (fftSize - 1) == 0, "OFDM fftSize must be a power of two in 256...32768")
        precondition(cyclicPrefix >= 0 && cyclicPrefix <= fftSize / 2, "OFDM cyclicPrefix must be 0...fftSize/2")
        precondition(firstCarrier >= 1 && lastCarrier < fftSize / 2 && firstCarrier + 8 <= lastCarrier, "OFDM carriers must lie in 1..<fftSize/2")
        precondition((2...64).contains(pilotSpacing), "OFDM pilotSpacing must be 2...64")
        self.fftSize = fftSize
        self.cyclicPrefix = cyclicPrefix
        self.firstCarrier = firstCarrier
        self.lastCarrier = lastCarrier
        self.pilotSpacing = pilotSpacing
    }

    /// A grid whose carriers span `lowHz...highHz`.
    public init(fftSize: Int, cyclicPrefix: Int, lowHz: Double, highHz: Double, pilotSpacing: Int) {
        let spacing = Self.sampleRate / Double(fftSize)
        self.init(fftSize: fftSize, cyclicPrefix: cyclicPrefix,
                  firstCarrier: Int((lowHz / spacing).rounded(.up)), lastCarrier: Int((highHz / spacing).rounded(.down)),
                  pilotSpacing: pilotSpacing)
    }

    /// Samples per symbol, prefix included.
    public var symbolLength: Int { fftSize + cyclicPrefix }
    /// Carrier spacing in Hz.
    public var carrierSpacing: Double { Self.sampleRate / Double(fftSize) }
    /// Seconds per symbol, prefix included.
    public var symbolSeconds: Double { Double(symbolLength) / Self.sampleRate }
    /// Carriers used.
    public var carrierCount: Int { lastCarrier - firstCarrier + 1 }

    /// Whether carrier `k` (in the band) is a pilot.
    @inline(__always)
    public func isPilot(_ k: Int) -> Bool { (k - firstCarrier) % pilotSpacing == 0 || k == lastCarrier }

    /// The pilot carriers, lowest first.
    public var pilotCarriers: [Int] { (firstCarrier...lastCarrier).filter(isPilot) }
    /// The data carriers, lowest first.
    public var dataCarriers: [Int] { (firstCarrier...lastCarrier).filter { !isPilot($0) } }
    /// Data carriers per symbol.
    public var dataCarrierCount: Int { carrierCount - pilotCarriers.count }

    /// The band in Hz, e.g. "305-7992 Hz".
    public var bandDescription: String {
        "\(Int((Double(firstCarrier) * carrierSpacing).rounded()))-\(Int((Double(lastCarrier) * carrierSpacing).rounded())) Hz"
    }

    /// The grid of the preamble and header every transmission starts with: 2048-point symbols with a
    /// 512-sample prefix (10.7 ms of echo), carriers 305-7992 Hz (what a speaker, a microphone and most
    /// radios pass), a pilot every 8th carrier in the header.
    public static let preamble = OFDMNumerology(fftSize: 2048, cyclicPrefix: 512, firstCarrier: 13, lastCarrier: 341, pilotSpacing: 8)

    /// The grid of the training after the header: 4096-point symbols over the whole band a sound card
    /// passes (211 Hz-19.8 kHz) with a 5.3 ms prefix. Every data grid uses 4096-point symbols with its
    /// carriers inside this band, so the training gives the channel of any of them, and the SNR of
    /// every carrier whatever the transmission's own band (what rate adaptation chooses by).
    public static let sounding = OFDMNumerology(fftSize: 4096, cyclicPrefix: 256, firstCarrier: 18, lastCarrier: 1689, pilotSpacing: 32)

    /// Whether data symbols on this grid can follow the training (``sounding``): the same transform
    /// size and carriers inside its band.
    public var fitsSounding: Bool {
        fftSize == Self.sounding.fftSize && firstCarrier >= Self.sounding.firstCarrier && lastCarrier <= Self.sounding.lastCarrier
    }

    /// Samples from a transmission's start to its first data symbol: the preamble, the header and
    /// the training.
    public static var startLength: Int {
        preamble.cyclicPrefix + 3 * preamble.fftSize + preamble.cyclicPrefix + sounding.cyclicPrefix + 2 * sounding.fftSize
    }

    /// Whether data symbols on this grid can follow a training: the grids that fit ``sounding``, and
    /// grids of longer symbols (the room grid) whose band lies inside the sounding's.
    public var hasTraining: Bool {
        if fitsSounding { return true }
        let s = Self.sounding
        return fftSize > s.fftSize && fftSize % s.fftSize == 0
            && Double(firstCarrier) * carrierSpacing >= Double(s.firstCarrier) * s.carrierSpacing
            && Double(lastCarrier) * carrierSpacing <= Double(s.lastCarrier) * s.carrierSpacing
    }

    /// The training a transmission on `grid` sends after its header: ``sounding`` for the grids that
    /// fit it. A grid of longer symbols (the room grid, for reverberation far longer than the
    /// sounding's prefix) is trained on its own transform size and band, with a prefix of at least
    /// a quarter of a symbol, so the channel is measured at its carriers' spacing and the first
    /// training window holds little of the header's reverberation (the second one is preceded by the
    /// first).
    public static func training(for grid: OFDMNumerology) -> OFDMNumerology {
        if grid.fitsSounding { return sounding }
        return OFDMNumerology(fftSize: grid.fftSize, cyclicPrefix: max(grid.cyclicPrefix, grid.fftSize / 4),
                              firstCarrier: grid.firstCarrier, lastCarrier: grid.lastCarrier, pilotSpacing: grid.pilotSpacing)
    }

    /// This grid's carriers as carriers of ``sounding`` (what ``OFDMStatistics/carrierSNR`` is on):
    /// the same for the grids that fit it, the ones whose spacing holds them for a grid of longer
    /// symbols.
    public var soundingCarriers: ClosedRange<Int> {
        let ratio = max(1, fftSize / Self.sounding.fftSize)
        return (firstCarrier / ratio)...(lastCarrier / ratio)
    }

    /// Samples from the start of a transmission on `grid` to its first data symbol (``startLength``
    /// for the grids that fit the sounding).
    public static func startLength(for grid: OFDMNumerology) -> Int {
        let t = training(for: grid)
        return preamble.cyclicPrefix + 3 * preamble.fftSize + preamble.cyclicPrefix + t.cyclicPrefix + 2 * t.fftSize
    }
}

/// The known values the receiver compares with: the preamble's and training symbols' carriers
/// (QPSK) and the pilots (BPSK), each drawn from its own fixed seed.
enum OFDMSequences {
    /// Unit-magnitude QPSK values for carriers `first...last` from `seed`.
    static func qpsk(count: Int, seed: UInt64) -> [(re: Float, im: Float)] {
        var rng = SplitMix64(seed: seed)
        let a = Float(0.5.squareRoot())
        return (0..<count).map { _ in
            let r = rng.next()
            return (r & 1 == 0 ? a : -a, r & 2 == 0 ? a : -a)
        }
    }

    static let preambleSeed: UInt64 = 0x0FD1_7EA5_5EED_0001
    static let trainingSeed: UInt64 = 0x0FD1_7EA5_5EED_0002
    static let pilotSeed: UInt64 = 0x0FD1_7EA5_5EED_0003

    /// The pilot signs (+1 or −1) of symbol `index` for `count` pilots.
    static func pilotSigns(symbol index: Int, count: Int) -> [Float] {
        signs(seed: pilotSeed, symbol: index, count: count)
    }

    /// `count` pseudo-random signs (+1 or −1) of symbol `index` in the sequence of `seed` (the OFDM
    /// and HF modems' pilots).
    static func signs(seed: UInt64, symbol index: Int, count: Int) -> [Float] {
        var rng = SplitMix64(seed: seed &+ UInt64(truncatingIfNeeded: index) &* 0x9E37_79B9)
        var out = [Float](repeating: 1, count: count)
        var bits: UInt64 = 0
        for i in 0..<count {
            if i % 64 == 0 { bits = rng.next() }
            out[i] = bits & 1 == 0 ? 1 : -1
            bits >>= 1
        }
        return out
    }
}
