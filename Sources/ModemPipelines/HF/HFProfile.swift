import ModemCodecs
import ModemDSP

/// One configuration of the HF modem: a grid (``HFGrid/robust`` for fading channels, ``HFGrid/wide``
/// for steady ones), a constellation, an LDPC code rate and a repetition (each code bit sent that
/// many times, far apart, for the slowest rates). Each has an id the header carries, so the receiver
/// needs no settings.
public struct HFProfile: Sendable, Hashable, Identifiable {
    /// The id in the header (1...255).
    public let id: Int
    /// The grid's name: "robust" or "wide".
    public let gridName: String
    /// The data grid.
    public let grid: HFGrid
    /// The data carriers' constellation.
    public let constellation: QAMConstellation
    /// The code rate.
    public let rate: LDPCRate
    /// Copies of each code bit (1...64).
    public let repetition: Int

    /// The code of this configuration.
    public var code: LDPCCode { LDPCCode.standard(rate) }
    /// Code bits per block.
    public var codeLength: Int { LDPCCode.standardLength }
    /// Information bits per block.
    var codeInformationLength: Int {
        let (num, den) = rate.fraction
        return LDPCCode.standardLength / den * num
    }
    /// Payload bytes per code block.
    public var blockPayload: Int { (codeInformationLength - 48) / 8 }
    /// Coded bits per data symbol.
    public var bitsPerSymbol: Int { grid.dataCarrierCount * constellation.bitsPerPoint }

    /// The net payload rate in bit/s while data symbols are sent (the preamble and header, 0.42 s
    /// per transmission, not counted).
    public var netBitRate: Double {
        Double(bitsPerSymbol) * Double(8 * blockPayload) / Double(codeLength) / Double(repetition) / grid.symbolSeconds
    }

    /// A name for reports: "QPSK 1/2 x3 wide".
    public var name: String {
        "\(constellation.displayName) \(rate.rawValue)\(repetition > 1 ? " x\(repetition)" : "") \(gridName)"
    }

    /// Code blocks for `bytes` of payload.
    public func blockCount(forPayload bytes: Int) -> Int { max(1, (bytes + blockPayload - 1) / blockPayload) }

    /// Data symbols for `bytes` of payload.
    public func symbolCount(forPayload bytes: Int) -> Int {
        (blockCount(forPayload: bytes) * codeLength * repetition + bitsPerSymbol - 1) / bitsPerSymbol
    }

    /// Seconds of audio for `bytes` of payload, the preamble and header included.
    public func seconds(forPayload bytes: Int) -> Double {
        Double(HFGrid.startLength + symbolCount(forPayload: bytes) * grid.symbolLength) / HFGrid.sampleRate
    }
}

extension HFProfile {
    private static func robust(_ id: Int, _ c: QAMConstellation, _ r: LDPCRate, _ rep: Int = 1) -> HFProfile {
        HFProfile(id: id, gridName: "robust", grid: .robust, constellation: c, rate: r, repetition: rep)
    }
    private static func wide(_ id: Int, _ c: QAMConstellation, _ r: LDPCRate, _ rep: Int = 1) -> HFProfile {
        HFProfile(id: id, gridName: "wide", grid: .wide, constellation: c, rate: r, repetition: rep)
    }

    /// Every configuration, slowest first.
    public static let all: [HFProfile] = [
        robust(1, .qpsk, .r1_2, 32),
        robust(2, .qpsk, .r1_2, 16),
        robust(3, .qpsk, .r1_2, 8),
        robust(4, .qpsk, .r1_2, 4),
        robust(5, .qpsk, .r1_2, 3),
        robust(6, .qpsk, .r1_2, 2),
        robust(7, .qpsk, .r1_2),
        wide(8, .qpsk, .r1_2),
        robust(9, .qpsk, .r3_4),
        wide(10, .qpsk, .r3_4),
        robust(11, .qam16, .r1_2),
        wide(12, .qam16, .r1_2),
        robust(13, .qam16, .r3_4),
        wide(14, .qam16, .r2_3),
        wide(15, .qam16, .r3_4),
        wide(16, .qam64, .r2_3),
        wide(17, .qam64, .r3_4),
        wide(18, .qam64, .r5_6),
        wide(19, .qam256, .r3_4),
        wide(20, .qam256, .r5_6),
    ]

    /// The configuration with header id `id`.
    public static func withID(_ id: Int) -> HFProfile? { all.first { $0.id == id } }

    /// The default: QPSK rate 1/2 on the robust grid (1.5 kbit/s, fading channels at moderate SNR).
    public static var standard: HFProfile { withID(7)! }

    /// The configuration with the highest net rate at or below `bitRate`, or nil when even the
    /// slowest is faster.
    public static func fastest(atMost bitRate: Double) -> HFProfile? {
        all.filter { $0.netBitRate.rounded(.down) <= bitRate }.max { $0.netBitRate < $1.netBitRate }
    }
}
