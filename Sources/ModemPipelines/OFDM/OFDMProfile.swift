#if canImport(Glibc)
import Glibc
#endif
import ModemCodecs
import ModemDSP

/// One configuration of the OFDM modem: a grid (band, symbol and prefix lengths), a constellation
/// and a code rate. Each has an id the header carries, so the receiver needs no settings.
public struct OFDMProfile: Sendable, Hashable, Identifiable {
    /// The id in the header (1...255).
    public let id: Int
    /// The grid's name: "cable" (full band, short prefix) or "air" (a speaker's band, long prefix).
    public let gridName: String
    /// The data grid.
    public let numerology: OFDMNumerology
    /// The data carriers' constellation.
    public let constellation: QAMConstellation
    /// The code rate.
    public let rate: LDPCRate
    /// The SNR (dB, over the full 0-24 kHz band, white noise) this configuration needs: the lowest at
    /// which 16 KiB came back byte-exact (`scripts/bench-rate.py thresholds`, Benchmarks/README.md)
    /// and 1 dB of margin.
    public let requiredSNR: Double

    /// The code of this configuration.
    public var code: LDPCCode { LDPCCode.standard(rate) }

    /// Payload bytes per code block.
    public var blockPayload: Int { (codeInformationLength - 48) / 8 }

    /// Code bits per block (the standard length), without building the code (``code`` draws its graph
    /// on first use, tens of milliseconds: `--help` and the rate table must not pay that).
    public var codeLength: Int { LDPCCode.standardLength }

    /// Information bits per block.
    var codeInformationLength: Int {
        let (num, den) = rate.fraction
        return LDPCCode.standardLength / den * num
    }

    /// Coded bits per data symbol.
    public var bitsPerSymbol: Int { numerology.dataCarrierCount * constellation.bitsPerPoint }

    /// The net payload rate in bit/s while data symbols are sent (the preamble, header and
    /// training, 0.3 s per transmission, not counted).
    public var netBitRate: Double {
        Double(bitsPerSymbol) * Double(8 * blockPayload) / Double(codeLength) / numerology.symbolSeconds
    }

    /// A name for reports: "ofdm-1024qam-5/6-cable".
    public var name: String { "\(constellation.rawValue) \(rate.rawValue) \(gridName)" }

    /// Data symbols for `bytes` of payload (nil: unknown).
    public func symbolCount(forPayload bytes: Int) -> Int {
        let blocks = max(1, (bytes + blockPayload - 1) / blockPayload)
        return (blocks * codeLength + bitsPerSymbol - 1) / bitsPerSymbol
    }

    /// Seconds of audio for `bytes` of payload, the preamble included.
    public func seconds(forPayload bytes: Int) -> Double {
        (Double(OFDMNumerology.startLength) + Double(symbolCount(forPayload: bytes) * numerology.symbolLength)) / OFDMNumerology.sampleRate
    }
}

extension OFDMProfile {
    /// The full band of a sound-card cable (211 Hz-19.8 kHz) with a 1.3 ms prefix.
    public static let cableGrid = OFDMNumerology(fftSize: 4096, cyclicPrefix: 64, lowHz: 200, highHz: 19800, pilotSpacing: 32)
    /// The whole band of a sound-card cable (211 Hz-20.5 kHz, the top carriers a few dB down on a
    /// 20 kHz low-pass) with a 1.3 ms prefix and half the cable grid's pilots: for 16,384-QAM.
    public static let wideGrid = OFDMNumerology(fftSize: 4096, cyclicPrefix: 64, firstCarrier: 18, lastCarrier: 1750, pilotSpacing: 64)
    /// A speaker and a microphone (410 Hz-8.6 kHz) with a 5.3 ms prefix for the room's echoes.
    public static let airGrid = OFDMNumerology(fftSize: 4096, cyclicPrefix: 256, lowHz: 400, highHz: 8600, pilotSpacing: 16)

    /// Every configuration, slowest first.
    public static let all: [OFDMProfile] = [
        OFDMProfile(id: 1, gridName: "air", numerology: airGrid, constellation: .bpsk, rate: .r1_2, requiredSNR: -2),
        OFDMProfile(id: 2, gridName: "air", numerology: airGrid, constellation: .qpsk, rate: .r1_2, requiredSNR: 0),
        OFDMProfile(id: 3, gridName: "air", numerology: airGrid, constellation: .qpsk, rate: .r3_4, requiredSNR: 3),
        OFDMProfile(id: 4, gridName: "air", numerology: airGrid, constellation: .qam16, rate: .r1_2, requiredSNR: 5),
        OFDMProfile(id: 5, gridName: "air", numerology: airGrid, constellation: .qam16, rate: .r3_4, requiredSNR: 9),
        OFDMProfile(id: 6, gridName: "air", numerology: airGrid, constellation: .qam64, rate: .r2_3, requiredSNR: 13),
        OFDMProfile(id: 7, gridName: "air", numerology: airGrid, constellation: .qam64, rate: .r3_4, requiredSNR: 14),
        OFDMProfile(id: 8, gridName: "air", numerology: airGrid, constellation: .qam256, rate: .r3_4, requiredSNR: 19),
        OFDMProfile(id: 16, gridName: "cable", numerology: cableGrid, constellation: .qam16, rate: .r3_4, requiredSNR: 12),
        OFDMProfile(id: 17, gridName: "cable", numerology: cableGrid, constellation: .qam64, rate: .r3_4, requiredSNR: 17),
        OFDMProfile(id: 18, gridName: "cable", numerology: cableGrid, constellation: .qam256, rate: .r3_4, requiredSNR: 22),
        OFDMProfile(id: 19, gridName: "cable", numerology: cableGrid, constellation: .qam256, rate: .r5_6, requiredSNR: 24),
        OFDMProfile(id: 20, gridName: "cable", numerology: cableGrid, constellation: .qam1024, rate: .r3_4, requiredSNR: 27),
        OFDMProfile(id: 21, gridName: "cable", numerology: cableGrid, constellation: .qam1024, rate: .r5_6, requiredSNR: 29),
        OFDMProfile(id: 22, gridName: "cable", numerology: cableGrid, constellation: .qam4096, rate: .r3_4, requiredSNR: 32),
        OFDMProfile(id: 23, gridName: "cable", numerology: cableGrid, constellation: .qam4096, rate: .r5_6, requiredSNR: 35),
        OFDMProfile(id: 24, gridName: "cable", numerology: cableGrid, constellation: .qam4096, rate: .r9_10, requiredSNR: 37),
        OFDMProfile(id: 25, gridName: "wide", numerology: wideGrid, constellation: .qam16384, rate: .r5_6, requiredSNR: 39),
    ]

    /// The configuration with header id `id`.
    public static func withID(_ id: Int) -> OFDMProfile? { all.first { $0.id == id } }

    /// The default: what a sound-card cable carries with margin (1024-QAM, rate 3/4, full band).
    public static var standard: OFDMProfile { withID(20)! }

    /// What a line measured by a transmission's training (``OFDMStatistics/carrierSNR``) offers this
    /// configuration, as the full-band SNR of a flat line with white noise that would be alike (what
    /// ``requiredSNR`` is in): the effective SNR over its carriers, less what a grid of fewer carriers
    /// gains per carrier, less the share of the band the training's carriers hold.
    public func lineSNR(_ statistics: OFDMStatistics) -> Double {
        let t = OFDMNumerology.sounding
        let louder = 10 * log10(Double(t.carrierCount) / Double(numerology.carrierCount))
        let share = 10 * log10(Double(t.fftSize / 2) / Double(t.carrierCount))
        return statistics.effectiveSNR(first: numerology.firstCarrier, last: numerology.lastCarrier) + louder - share
    }

    /// The fastest configuration that the line `statistics` measured carries with `margin` dB to
    /// spare, or nil when none does (nil too when the training was not read).
    public static func fastest(for statistics: OFDMStatistics, margin: Double = 3) -> OFDMProfile? {
        guard !statistics.carrierSNR.isEmpty else { return nil }
        return all.filter { $0.lineSNR(statistics) >= $0.requiredSNR + margin }.max { $0.netBitRate < $1.netBitRate }
    }

    /// The configuration with the highest net rate at or below `bitRate`, or nil when even the
    /// slowest is faster.
    public static func fastest(atMost bitRate: Double) -> OFDMProfile? {
        all.filter { $0.netBitRate.rounded(.down) <= bitRate }.max { $0.netBitRate < $1.netBitRate }
    }
}
