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
    /// The grid's name: "cable" (full band, short prefix), "air" (a speaker's band, long prefix) or
    /// "room" (a speaker's band, long symbols and a prefix for a room's reverberation).
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
        (Double(OFDMNumerology.startLength(for: numerology)) + Double(symbolCount(forPayload: bytes) * numerology.symbolLength)) / OFDMNumerology.sampleRate
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

    /// A speaker and a microphone near each other, echoes up to about 2 ms (258 Hz-11.0 kHz): a
    /// 2.7 ms prefix (128 samples, 3 % of a symbol against the air grid's 6 %), a pilot every 64th
    /// carrier, and carriers to 11 kHz, on the band-pass's slope above 9 kHz (a 4th-order 9 kHz low-pass
    /// leaves them 6-10 dB down, still worth 4-7 bits of 256-QAM): on the speaker-like line it carries
    /// 42 % more than the air grid.
    public static let nearGrid = OFDMNumerology(fftSize: 4096, cyclicPrefix: 128, firstCarrier: 22, lastCarrier: 938, pilotSpacing: 64)

    /// A speaker and a microphone in a reverberant room (250 Hz-9.75 kHz): 32768-point symbols (1.46 Hz
    /// carriers, 683 ms) with a 171 ms prefix, trained on their own grid. A room's reverberation lasts
    /// hundreds of milliseconds (RT60 0.2-0.6 s): on the air grid everything after its 5.3 ms prefix
    /// is noise; here only what outlasts 171 ms, and a late path spoils a share of a window that is
    /// eight times as long.
    public static let roomGrid = OFDMNumerology(fftSize: 32768, cyclicPrefix: 8192, lowHz: 250, highHz: 9750, pilotSpacing: 32)

    /// The near grid's configurations (ids 30...), slowest first: 256-QAM on every carrier the
    /// speaker-like line (250-9000 Hz, a 1.5 ms echo, SNR 24 dB) still carries something on. Not in
    /// ``all`` (rate adaptation on a link keeps to the air and cable grids); `--bitrate`
    /// (``fastest(atMost:)``) and the receiver (``withID(_:)``) know them.
    public static let near: [OFDMProfile] = [
        OFDMProfile(id: 30, gridName: "near", numerology: nearGrid, constellation: .qam256, rate: .r2_3, requiredSNR: 18),
        OFDMProfile(id: 31, gridName: "near", numerology: nearGrid, constellation: .qam256, rate: .r3_4, requiredSNR: 19),
    ]

    /// Whether the receiver fits the training's channel across carriers (``OFDMDataPlan/fitChannel``):
    /// on the near grid, where it was measured to help.
    public var fitsChannel: Bool { numerology == Self.nearGrid }

    /// The room grid's configurations, slowest first (ids 40...: apart from the cable's and the
    /// air's). Their ``requiredSNR`` is estimated from the cable and air grids' figures for the same or
    /// the neighbouring constellation and code rate, not measured on this grid (a room's notches,
    /// not white noise, are what limits it there). Not in ``all``: rate adaptation on a link picks among the sounding's grids; `--bitrate`
    /// (``fastest(atMost:)``) and the receiver (``withID(_:)``) know these too.
    public static let room: [OFDMProfile] = [
        OFDMProfile(id: 40, gridName: "room", numerology: roomGrid, constellation: .qpsk, rate: .r3_4, requiredSNR: 3),
        OFDMProfile(id: 41, gridName: "room", numerology: roomGrid, constellation: .qam16, rate: .r2_3, requiredSNR: 8),
        OFDMProfile(id: 42, gridName: "room", numerology: roomGrid, constellation: .qam16, rate: .r5_6, requiredSNR: 11),
        OFDMProfile(id: 43, gridName: "room", numerology: roomGrid, constellation: .qam64, rate: .r3_4, requiredSNR: 15),
        OFDMProfile(id: 44, gridName: "room", numerology: roomGrid, constellation: .qam64, rate: .r5_6, requiredSNR: 17),
        OFDMProfile(id: 45, gridName: "room", numerology: roomGrid, constellation: .qam256, rate: .r3_4, requiredSNR: 20),
        OFDMProfile(id: 46, gridName: "room", numerology: roomGrid, constellation: .qam256, rate: .r5_6, requiredSNR: 23),
        OFDMProfile(id: 47, gridName: "room", numerology: roomGrid, constellation: .qam1024, rate: .r3_4, requiredSNR: 26),
        OFDMProfile(id: 48, gridName: "room", numerology: roomGrid, constellation: .qam1024, rate: .r5_6, requiredSNR: 28),
    ]

    /// Every configuration of the grids that follow the sounding (air and cable), slowest first.
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

    /// Every configuration a transmission may use: ``all`` and ``room``.
    public static var everyConfiguration: [OFDMProfile] { room + near + all }

    /// The configuration with header id `id`.
    public static func withID(_ id: Int) -> OFDMProfile? {
        all.first { $0.id == id } ?? near.first { $0.id == id } ?? room.first { $0.id == id }
    }

    /// The default: what a sound-card cable carries with margin (1024-QAM, rate 3/4, full band).
    public static var standard: OFDMProfile { withID(20)! }

    /// What a line measured by a transmission's training (``OFDMStatistics/carrierSNR``) offers this
    /// configuration, as the full-band SNR of a flat line with white noise that would be alike (what
    /// ``requiredSNR`` is in): the effective SNR over its carriers, less what a grid of fewer carriers
    /// gains per carrier, less the share of the band the training's carriers hold.
    public func lineSNR(_ statistics: OFDMStatistics) -> Double {
        let t = OFDMNumerology.sounding
        // A grid of longer symbols (the room grid): its carriers on the sounding's, and its carriers
        // as loud against the noise per bin as the ratio of carriers to transform size says.
        let louder = 10 * log10(Double(t.carrierCount * numerology.fftSize) / Double(numerology.carrierCount * t.fftSize))
        let share = 10 * log10(Double(t.fftSize / 2) / Double(t.carrierCount))
        let c = numerology.soundingCarriers
        return statistics.effectiveSNR(first: c.lowerBound, last: c.upperBound) + louder - share
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
        everyConfiguration.filter { $0.netBitRate.rounded(.down) <= bitRate }.max { $0.netBitRate < $1.netBitRate }
    }
}
