import ModemRuntime

/// The time and frequency grid of one kind of symbol of the HF modem (``HFModulator``), at 8 kHz:
/// the transform size, the cyclic prefix, the carriers (all inside 300-2600 Hz, an SSB channel's
/// passband) and the pilots.
///
/// Carrier k is at `k · 8000 / fftSize` Hz. Carriers `firstCarrier...lastCarrier` are used; every
/// `pilotSpacing`-th of them counted from the first, and the last, carries a known BPSK pilot in every
/// symbol; the others carry data. The receiver smooths the pilots over `smoothing` symbols on either
/// side (long for a steady line, short for a fading one) and interpolates them across the band.
public struct HFGrid: Sendable, Hashable {
    /// The sample rate the HF modem works at, in Hz.
    public static let sampleRate = 8000.0
    /// The centre the receiver mixes to baseband from (Hz): a whole number of carriers of every grid.
    public static let centreHz = 1437.5

    /// Samples per transform (a power of two).
    public let fftSize: Int
    /// Cyclic-prefix samples before each symbol: longer than the channel's echoes.
    public let cyclicPrefix: Int
    /// The lowest and highest carrier used.
    public let firstCarrier: Int
    public let lastCarrier: Int
    /// Every n-th used carrier is a pilot.
    public let pilotSpacing: Int
    /// Symbols on either side whose pilots are averaged into a symbol's channel estimate.
    public let smoothing: Int
    /// When above 0, the data's channel estimate is `HFWienerEstimator`'s (MMSE in time over up to
    /// this many symbols on either side, then across the band) instead of the plain average over
    /// `smoothing` symbols and the cubic interpolation.
    public var wienerWindow = 0

    /// Creates a grid.
    /// - Precondition: `fftSize` a power of two (64...4096), the carriers inside 300-2600 Hz.
    public init(fftSize: Int, cyclicPrefix: Int, firstCarrier: Int, lastCarrier: Int, pilotSpacing: Int, smoothing: Int) {
        precondition(fftSize >= 64 && fftSize <= 4096 && fftSize & (fftSize - 1) == 0, "HF fftSize must be a power of two in 64...4096")
        let spacing = Self.sampleRate / Double(fftSize)
        precondition(Double(firstCarrier) * spacing >= 300 && Double(lastCarrier) * spacing <= 2600 && firstCarrier + 4 <= lastCarrier,
                     "HF carriers must lie in 300-2600 Hz")
        precondition(pilotSpacing >= 2 && cyclicPrefix >= 0 && cyclicPrefix < fftSize && smoothing >= 0)
        self.fftSize = fftSize
        self.cyclicPrefix = cyclicPrefix
        self.firstCarrier = firstCarrier
        self.lastCarrier = lastCarrier
        self.pilotSpacing = pilotSpacing
        self.smoothing = smoothing
    }

    /// Samples per symbol, prefix included.
    public var symbolLength: Int { fftSize + cyclicPrefix }
    /// Seconds per symbol, prefix included.
    public var symbolSeconds: Double { Double(symbolLength) / Self.sampleRate }
    /// Carrier spacing in Hz.
    public var carrierSpacing: Double { Self.sampleRate / Double(fftSize) }
    /// Carriers used.
    public var carrierCount: Int { lastCarrier - firstCarrier + 1 }
    /// Whether carrier `k` is a pilot.
    public func isPilot(_ k: Int) -> Bool { (k - firstCarrier) % pilotSpacing == 0 || k == lastCarrier }
    /// The pilot carriers, lowest first.
    public var pilotCarriers: [Int] { (firstCarrier...lastCarrier).filter(isPilot) }
    /// The data carriers, lowest first.
    public var dataCarriers: [Int] { (firstCarrier...lastCarrier).filter { !isPilot($0) } }
    /// Data carriers per symbol.
    public var dataCarrierCount: Int { carrierCount - pilotCarriers.count }
    /// The transform bin of carrier `k` at baseband (mixed down by ``centreHz``), in 0..<fftSize.
    func basebandBin(_ k: Int) -> Int {
        let offset = k - Int((Self.centreHz / carrierSpacing).rounded())
        return offset >= 0 ? offset : offset + fftSize
    }
    /// The band in Hz, e.g. "312-2594 Hz".
    public var bandDescription: String {
        "\(Int(Double(firstCarrier) * carrierSpacing))-\(Int((Double(lastCarrier) * carrierSpacing).rounded())) Hz"
    }

    /// The robust grid: 32 ms symbols (31.25 Hz carriers) and a 4 ms prefix, a pilot on every 5th
    /// carrier (156 Hz apart: two paths up to 3 ms apart are resolved). The header's channel is
    /// smoothed over ±2 symbols (the channel of a 1-2 Hz Doppler spread changes within a tenth of a
    /// second); the data's is `HFWienerEstimator`'s over up to ±10, which adapts to the Doppler spread
    /// the pilots measure. The header and the configurations for fading channels use it.
    public static let robust: HFGrid = {
        var g = HFGrid(fftSize: 256, cyclicPrefix: 32, firstCarrier: 10, lastCarrier: 82, pilotSpacing: 5, smoothing: 2)
        g.wienerWindow = 10
        return g
    }()

    /// The wide grid: 64 ms symbols (15.6 Hz carriers) and a 4 ms prefix, a pilot on every 8th carrier
    /// and long smoothing: the most data for a steady channel.
    public static let wide = HFGrid(fftSize: 512, cyclicPrefix: 32, firstCarrier: 20, lastCarrier: 166, pilotSpacing: 8, smoothing: 6)

    /// The preamble: `preambleRepeats` copies of a 64-sample periodic signal (lines every 125 Hz from
    /// 375 to 2500 Hz), the last one inverted (the end marker).
    public static let preamblePeriod = 64
    public static let preambleRepeats = 16
    /// Samples of the preamble.
    public static var preambleLength: Int { preamblePeriod * preambleRepeats }
    /// Header symbols (on ``robust``) after the preamble.
    public static let headerSymbols = 8
    /// Samples from a transmission's start to its first data symbol.
    public static var startLength: Int { preambleLength + headerSymbols * robust.symbolLength }
}

/// The known values of the HF modem: the preamble's lines and the pilots, each from a fixed seed.
enum HFSequences {
    static let preambleSeed: UInt64 = 0x4F1D_5EED_0000_0001
    static let pilotSeed: UInt64 = 0x4F1D_5EED_0000_0002
    static let headerPilotSeed: UInt64 = 0x4F1D_5EED_0000_0003

    /// The preamble's lines: bins 3...20 of the 64-sample period, unit-magnitude QPSK phases.
    static let preambleBins = 3...20
    static func preamblePhases() -> [(re: Float, im: Float)] {
        var rng = SplitMix64(seed: preambleSeed)
        let a = Float(0.5.squareRoot())
        return preambleBins.map { _ in
            let r = rng.next()
            return (r & 1 == 0 ? a : -a, r & 2 == 0 ? a : -a)
        }
    }

    /// The pilot signs (+1 or −1) of symbol `index` (`header`: the header's symbols) for `count` pilots.
    static func pilotSigns(symbol index: Int, count: Int, header: Bool) -> [Float] {
        OFDMSequences.signs(seed: header ? headerPilotSeed : pilotSeed, symbol: index, count: count)
    }
}
