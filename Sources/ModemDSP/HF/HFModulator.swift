/// Makes the audio of an HF transmission at 8 kHz: the preamble (a 64-sample periodic signal
/// repeated, the last copy inverted: detection, timing and the frequency offset), the header symbols
/// on the ``HFGrid/robust`` grid (QPSK soft bits the caller coded), then data symbols on the
/// configuration's grid (the caller's bits on the data carriers, known BPSK pilots between them).
///
/// Every part has the same power: `rms` per sample. The samples are not clipped here.
public final class HFModulator {
    /// The data grid.
    public let grid: HFGrid
    /// The data carriers' constellation.
    public let constellation: QAMConstellation
    /// RMS level of every symbol (full scale is 1).
    public let rms: Float
    private let mapper: QAMMapper
    private let headerMapper = QAMMapper(.qpsk)
    private var dataSymbols = 0

    /// Creates a modulator.
    public init(grid: HFGrid, constellation: QAMConstellation, rms: Float) {
        precondition(rms > 0 && rms <= 0.5, "HFModulator rms must be in (0, 0.5]")
        self.grid = grid
        self.constellation = constellation
        self.rms = rms
        mapper = QAMMapper(constellation)
    }

    /// Coded bits one data symbol carries.
    public var bitsPerSymbol: Int { grid.dataCarrierCount * constellation.bitsPerPoint }

    /// Coded bits the header symbols carry (QPSK on the robust grid's data carriers).
    public static var headerBitCount: Int { HFGrid.headerSymbols * HFGrid.robust.dataCarrierCount * 2 }

    /// One period of the preamble (64 samples at unit carrier amplitude, not scaled).
    static func preamblePeriod() -> [Float] {
        let t = OFDMTransform(size: HFGrid.preamblePeriod)
        let phases = HFSequences.preamblePhases()
        var out = [Float](repeating: 0, count: HFGrid.preamblePeriod)
        let re = phases.map { $0.re }, im = phases.map { $0.im }
        re.withUnsafeBufferPointer { r in
            im.withUnsafeBufferPointer { i in
                out.withUnsafeMutableBufferPointer { t.symbol(first: HFSequences.preambleBins.lowerBound, re: r, im: i, into: $0) }
            }
        }
        // The real transform gives 2·Re{Σ X e^{jωn}}.
        return out.map { $0 / 2 }
    }

    /// The preamble and the header symbols carrying `headerBits` (``headerBitCount`` values, 0 or 1).
    public func start(headerBits: [UInt8]) -> [Float] {
        precondition(headerBits.count == Self.headerBitCount, "the header carries \(Self.headerBitCount) bits")
        let period = Self.preamblePeriod()
        let scale = rms / (Float(HFSequences.preambleBins.count) / 2).squareRoot()
        var out = [Float]()
        out.reserveCapacity(HFGrid.startLength)
        for r in 0..<HFGrid.preambleRepeats {
            let sign: Float = r == HFGrid.preambleRepeats - 1 ? -scale : scale
            out.append(contentsOf: period.map { $0 * sign })
        }
        let g = HFGrid.robust
        let transform = OFDMTransform(size: g.fftSize)
        let perSymbol = g.dataCarrierCount * 2
        for s in 0..<HFGrid.headerSymbols {
            let bits = Array(headerBits[(s * perSymbol)..<((s + 1) * perSymbol)])
            out.append(contentsOf: symbol(transform, grid: g, index: s, header: true, mapper: headerMapper, bits: bits))
        }
        return out
    }

    /// The next data symbol (prefix included) carrying `bits` (``bitsPerSymbol`` values, 0 or 1).
    public func dataSymbol(_ bits: [UInt8]) -> [Float] {
        precondition(bits.count == bitsPerSymbol, "a data symbol carries \(bitsPerSymbol) bits")
        let transform = dataTransform ?? OFDMTransform(size: grid.fftSize)
        dataTransform = transform
        defer { dataSymbols += 1 }
        return symbol(transform, grid: grid, index: dataSymbols, header: false, mapper: mapper, bits: bits)
    }
    private var dataTransform: OFDMTransform?

    private func symbol(_ transform: OFDMTransform, grid g: HFGrid, index: Int, header: Bool, mapper: QAMMapper, bits: [UInt8]) -> [Float] {
        let pilots = g.pilotCarriers
        let signs = HFSequences.pilotSigns(symbol: index, count: pilots.count, header: header)
        var re = [Float](repeating: 0, count: g.carrierCount), im = re
        for (i, k) in pilots.enumerated() { re[k - g.firstCarrier] = signs[i] }
        let b = mapper.constellation.bitsPerPoint
        bits.withUnsafeBufferPointer { bits in
            for (i, k) in g.dataCarriers.enumerated() {
                let p = mapper.point(bits, at: i * b)
                re[k - g.firstCarrier] = p.re
                im[k - g.firstCarrier] = p.im
            }
        }
        // 2·Re{Σ X e^{jωn}} from the real transform; a real signal of K unit carriers has power K/2.
        let scale = rms / (2 * (Float(g.carrierCount) / 2).squareRoot())
        for i in re.indices {
            re[i] *= scale
            im[i] *= scale
        }
        var s = [Float](repeating: 0, count: g.fftSize)
        re.withUnsafeBufferPointer { r in
            im.withUnsafeBufferPointer { i in
                s.withUnsafeMutableBufferPointer { transform.symbol(first: g.firstCarrier, re: r, im: i, into: $0) }
            }
        }
        return Array(s[(g.fftSize - g.cyclicPrefix)...]) + s
    }
}
