import Foundation
import Testing
import ModemTestSupport
import ModemDSP
import ModemPipelines

/// How ``HFProfile/requiredCarrierSNR`` was measured (opt-in, about a minute: SWIFTMODEM_HF_SWEEP=1):
/// each configuration sends 2,000 bytes through white noise at falling SNRs, two seeds each; the
/// lowest SNR at which both came back whole, as the receiver measured it on the carriers, is printed.
@Suite("HF thresholds (opt-in sweep)")
struct HFThresholdSweep {
    @Test("the carrier SNR each configuration needs in white noise", .enabled(if: ProcessInfo.processInfo.environment["SWIFTMODEM_HF_SWEEP"] != nil))
    func sweep() throws {
        var rng = TestRandom(seed: 5)
        let payload = rng.bytes(2000)
        for p in HFProfile.all {
            let tx = try HFTransmitter.samples(payload: payload, profile: p)
            var lowest: (snr: Double, carrier: Double)?
            // From well above the expected threshold down, 1 dB at a time, until both seeds fail twice in a row.
            let top = (p.netBitRate > 6000 ? 30.0 : p.netBitRate > 2500 ? 20 : 12) - 10 * log10(Double(p.repetition))
            var failures = 0
            var snr = top
            while failures < 2 && snr > -20 {
                var ok = true
                var carrier = 0.0
                for seed: UInt64 in [1, 2] {
                    let r = try HFPipelineTests.receive(HFPipelineTests.noisy(tx, snr: snr, seed: seed))
                    if r.bytes != payload { ok = false; break }
                    for case .ended(_, let c) in r.events { carrier += c / 2 }
                }
                if ok { lowest = (snr, carrier); failures = 0 } else { failures += 1 }
                snr -= 1
            }
            print("HF sweep: id \(p.id) \(p.name): lowest 0-4 kHz SNR \(lowest.map { String($0.snr) } ?? "none"), carrier SNR \(lowest.map { String(format: "%.1f", $0.carrier) } ?? "-")")
        }
    }
}
