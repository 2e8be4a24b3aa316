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
    /// Whether `--bitrate` picks it (``fastest(atMost:)``). A configuration that another between the
    /// same two values of the benchmark's `--bitrate` list replaced stays in the table, so that its
    /// transmissions are still received, but is no longer picked.
    public var pickedByBitRate = true

    /// The longest code word (bits): a transmission's blocks are as few and as long as this allows.
    public static let maximumCodeLength = 64800

    /// How a payload is cut into code blocks: as few blocks as the longest code allows, all of one
    /// length, the shortest code length (a multiple of the rate's denominator) whose information bits
    /// hold an equal share of the payload, its count and its CRC-32. No block is padded by more than a
    /// few bytes, whatever the payload's length.
    public func blockLayout(forPayload bytes: Int) -> (blocks: Int, codeLength: Int) {
        let (num, den) = rate.fraction
        let maximumInformation = Self.maximumCodeLength / den * num
        let perBlockMaximum = (maximumInformation - 48) / 8
        let blocks = max(1, (bytes + perBlockMaximum - 1) / perBlockMaximum)
        let share = max(1, (bytes + blocks - 1) / blocks)
        // The code needs at least 96 bits and a multiple of the denominator.
        let information = max(8 * share + 48, 96 / den * num)
        let length = max(96, (information + num - 1) / num * den)
        return (blocks, length)
    }

    /// The code of a transmission of `bytes` (built once per length and process).
    public func code(forPayload bytes: Int) -> LDPCCode { LDPCCode.code(rate, length: blockLayout(forPayload: bytes).codeLength) }

    /// Coded bits per data symbol.
    public var bitsPerSymbol: Int { grid.dataCarrierCount * constellation.bitsPerPoint }

    /// The net payload rate in bit/s while data symbols are sent (the preamble and header, 0.42 s
    /// per transmission, not counted), for a payload that fills the longest code's blocks.
    public var netBitRate: Double {
        let (num, den) = rate.fraction
        let information = Self.maximumCodeLength / den * num
        return Double(bitsPerSymbol) * Double(information - 48) / Double(Self.maximumCodeLength) / Double(repetition) / grid.symbolSeconds
    }

    /// A name for reports: "QPSK 1/2 x3 wide".
    public var name: String {
        "\(constellation.displayName) \(rate.rawValue)\(repetition > 1 ? " x\(repetition)" : "") \(gridName)"
    }

    /// Code bits of a transmission of `bytes`, every copy included.
    public func streamLength(forPayload bytes: Int) -> Int {
        let layout = blockLayout(forPayload: bytes)
        return layout.blocks * layout.codeLength * repetition
    }

    /// Data symbols for `bytes` of payload.
    public func symbolCount(forPayload bytes: Int) -> Int {
        (streamLength(forPayload: bytes) + bitsPerSymbol - 1) / bitsPerSymbol
    }

    /// Seconds of audio for `bytes` of payload, the preamble and header included.
    public func seconds(forPayload bytes: Int) -> Double {
        Double(HFGrid.startLength + symbolCount(forPayload: bytes) * grid.symbolLength) / HFGrid.sampleRate
    }
}

extension HFProfile {
    private static func robust(_ id: Int, _ c: QAMConstellation, _ r: LDPCRate, _ rep: Int = 1, picked: Bool = true) -> HFProfile {
        HFProfile(id: id, gridName: "robust", grid: .robust, constellation: c, rate: r, repetition: rep, pickedByBitRate: picked)
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
        wide(6, .qpsk, .r1_2, 3),
        wide(7, .qpsk, .r1_2, 2),
        robust(8, .qpsk, .r1_2),
        robust(20, .qpsk, .r3_5),
        // Replaced by 3/5 (id 20) between 1600 and 2400 bit/s: 2/3 fails in fading at 10 dB.
        robust(9, .qpsk, .r2_3, picked: false),
        robust(10, .qam16, .r1_2),
        wide(11, .qam16, .r1_2),
        robust(12, .qam16, .r3_4),
        wide(13, .qam16, .r2_3),
        wide(14, .qam16, .r3_4),
        wide(15, .qam64, .r2_3),
        wide(16, .qam64, .r3_4),
        wide(17, .qam64, .r5_6),
        wide(18, .qam256, .r3_4),
        wide(19, .qam256, .r5_6),
    ]

    /// The configuration with header id `id`.
    public static func withID(_ id: Int) -> HFProfile? { all.first { $0.id == id } }

    /// The SNR on the carriers (dB, as the receiver measures it on the pilots: ``HFSymbols/carrierSNR``)
    /// each configuration needs in white noise, by id: the lowest at which 2,000 bytes came back whole
    /// for two seeds, 1 dB steps (`SWIFTMODEM_HF_SWEEP=1 swift test --filter HFThresholdSweep`), rounded
    /// up to half a dB. The carriers measure about 1.2 dB over the SNR3k (2.4 dB over the SNR in 0-4 kHz).
    static let thresholds: [Int: Double] = [
        // The slowest three are held by the header (-2.6 dB measured), not by their data.
        1: -2.5, 2: -2.5, 3: -2.5, 4: -1.5, 5: -1, 6: -1.5, 7: -1, 8: 3, 20: 4, 9: 5, 10: 8, 11: 7.5, 12: 11.5, 13: 9.5,
        14: 10.5, 15: 14.5, 16: 16.5, 17: 18.5, 18: 21.5, 19: 23,
    ]

    /// The SNR on the carriers (dB) this configuration needs in white noise: see ``fastest(forCarrierSNR:margin:)``.
    public var requiredCarrierSNR: Double { Self.thresholds[id] ?? .infinity }

    /// The fastest configuration (of those ``pickedByBitRate``) whose ``requiredCarrierSNR`` a line
    /// measured at `carrierSNR` dB on the carriers clears by `margin` dB, or nil when none does.
    public static func fastest(forCarrierSNR carrierSNR: Double, margin: Double) -> HFProfile? {
        all.filter { $0.pickedByBitRate && carrierSNR >= $0.requiredCarrierSNR + margin }.max { $0.netBitRate < $1.netBitRate }
    }

    /// The default: QPSK rate 1/2 on the robust grid (1.5 kbit/s, fading channels at moderate SNR).
    public static var standard: HFProfile { withID(8)! }

    /// The configuration with the highest net rate at or below `bitRate`, or nil when even the
    /// slowest is faster (only those ``pickedByBitRate``).
    public static func fastest(atMost bitRate: Double) -> HFProfile? {
        all.filter { $0.pickedByBitRate && $0.netBitRate.rounded(.down) <= bitRate }.max { $0.netBitRate < $1.netBitRate }
    }
}
