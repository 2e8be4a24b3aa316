/// Makes the audio of an OFDM transmission at 48 kHz, symbol by symbol: the preamble (a prefix and
/// two equal symbols, for detection, timing and the clock's drift), the header symbol (BPSK soft
/// bits the caller coded), the training of the data grid (a prefix and two equal known symbols, for
/// the channel and the noise on every carrier), then data symbols (the caller's bits on the data
/// carriers, known pilots between them).
///
/// Every kind of symbol has the same power: `rms` per sample. The samples are not clipped here.
public final class OFDMModulator {
    /// The data grid.
    public let numerology: OFDMNumerology
    /// The data carriers' constellation.
    public let constellation: QAMConstellation
    /// RMS level of every symbol (full scale is 1).
    public let rms: Float
    private let mapper: QAMMapper
    private let preambleTransform: OFDMTransform
    private let dataTransform: OFDMTransform
    private var dataSymbols = 0
    private let dataPilots: [Int]
    private let dataCarriers: [Int]

    /// Creates a modulator.
    /// - Parameters:
    ///   - numerology: the data symbols' grid.
    ///   - constellation: the data carriers' points.
    ///   - rms: the RMS level of every symbol (0 < rms ≤ 0.5).
    public init(numerology: OFDMNumerology, constellation: QAMConstellation, rms: Float) {
        precondition(rms > 0 && rms <= 0.5, "OFDMModulator rms must be in (0, 0.5]")
        precondition(numerology.hasTraining, "OFDM data grids use 4096-point symbols inside the training's band, or longer ones (the room grid)")
        self.numerology = numerology
        self.constellation = constellation
        self.rms = rms
        mapper = QAMMapper(constellation)
        preambleTransform = OFDMTransform(size: OFDMNumerology.preamble.fftSize)
        dataTransform = OFDMTransform(size: numerology.fftSize)
        dataPilots = numerology.pilotCarriers
        dataCarriers = numerology.dataCarriers
    }

    /// Coded bits one data symbol carries.
    public var bitsPerSymbol: Int { numerology.dataCarrierCount * constellation.bitsPerPoint }

    /// Soft-bit slots of the header symbol (its data carriers; one BPSK bit each).
    public static var headerBitCount: Int { OFDMNumerology.preamble.dataCarrierCount }

    /// The preamble, the header symbol carrying `headerBits` (``headerBitCount`` values, 0 or 1), and
    /// the training of the data grid.
    public func start(headerBits: [UInt8]) -> [Float] {
        precondition(headerBits.count == Self.headerBitCount, "the header symbol carries \(Self.headerBitCount) bits")
        let p = OFDMNumerology.preamble
        let known = OFDMSequences.qpsk(count: p.carrierCount, seed: OFDMSequences.preambleSeed)
        let s = symbol(preambleTransform, numerology: p, values: known)
        var out = [Float]()
        out.reserveCapacity(startLength)
        out.append(contentsOf: s[(p.fftSize - p.cyclicPrefix)...])
        out.append(contentsOf: s)
        out.append(contentsOf: s)
        // The header: BPSK on the data carriers, pilots on the others.
        var values = [(re: Float, im: Float)]()
        values.reserveCapacity(p.carrierCount)
        let pilotSigns = OFDMSequences.pilotSigns(symbol: OFDMSequences.headerSymbolIndex, count: p.pilotCarriers.count)
        var pi = 0, di = 0
        for k in p.firstCarrier...p.lastCarrier {
            if p.isPilot(k) {
                values.append((pilotSigns[pi], 0))
                pi += 1
            } else {
                values.append((headerBits[di] & 1 == 1 ? 1 : -1, 0))
                di += 1
            }
        }
        let h = symbol(preambleTransform, numerology: p, values: values)
        out.append(contentsOf: h[(p.fftSize - p.cyclicPrefix)...])
        out.append(contentsOf: h)
        // The training over the whole band (or the room grid's own): one prefix, two equal symbols.
        let sounding = OFDMNumerology.training(for: numerology)
        let t = symbol(dataTransform, numerology: sounding,
                       values: OFDMSequences.qpsk(count: sounding.carrierCount, seed: OFDMSequences.trainingSeed))
        out.append(contentsOf: t[(sounding.fftSize - sounding.cyclicPrefix)...])
        out.append(contentsOf: t)
        out.append(contentsOf: t)
        return out
    }

    /// The samples of `start(headerBits:)`: its length.
    public var startLength: Int { OFDMNumerology.startLength(for: numerology) }

    /// The next data symbol (prefix included) carrying `bits` (``bitsPerSymbol`` values, 0 or 1, in
    /// data-carrier order, each carrier's bits together).
    public func dataSymbol(_ bits: UnsafeBufferPointer<UInt8>) -> [Float] {
        precondition(bits.count == bitsPerSymbol, "a data symbol carries \(bitsPerSymbol) bits")
        let n = numerology
        let pilotSigns = OFDMSequences.pilotSigns(symbol: dataSymbols, count: dataPilots.count)
        dataSymbols += 1
        var values = [(re: Float, im: Float)](repeating: (0, 0), count: n.carrierCount)
        for (i, k) in dataPilots.enumerated() { values[k - n.firstCarrier] = (pilotSigns[i], 0) }
        let b = constellation.bitsPerPoint
        for (i, k) in dataCarriers.enumerated() { values[k - n.firstCarrier] = mapper.point(bits, at: i * b) }
        let s = symbol(dataTransform, numerology: n, values: values)
        return Array(s[(n.fftSize - n.cyclicPrefix)...]) + s
    }

    /// One symbol (no prefix) from the used carriers' values, scaled to ``rms``.
    private func symbol(_ transform: OFDMTransform, numerology n: OFDMNumerology, values: [(re: Float, im: Float)]) -> [Float] {
        // A real symbol from K unit-power carriers has power 2K per sample after the unscaled
        // inverse transform (each carrier and its mirror).
        let scale = rms / (2 * Float(n.carrierCount)).squareRoot()
        let re = values.map { $0.re * scale }, im = values.map { $0.im * scale }
        var out = [Float](repeating: 0, count: n.fftSize)
        re.withUnsafeBufferPointer { r in
            im.withUnsafeBufferPointer { i in
                out.withUnsafeMutableBufferPointer { transform.symbol(first: n.firstCarrier, re: r, im: i, into: $0) }
            }
        }
        return out
    }
}

extension OFDMSequences {
    /// The pilot index of the header symbol (data symbols count from 0).
    static let headerSymbolIndex = -1
}
