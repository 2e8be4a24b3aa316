import Foundation
import Testing
import ModemCodecs
import ModemLink

@Suite("LinkTest runs on the in-memory LoopbackMedium (audio both ways)")
struct LinkTestRunTests {
    @Test("master-slave, clean channel: 5 exchanges of 64 bytes all complete")
    func masterSlaveClean() throws {
        let options = LinkTestOptions(configuration: LinkConfiguration(), count: 5, size: 64, seed: 3)
        let medium = LoopbackMedium(impairments: LinkImpairments())
        let test = try LinkTest(options: options, medium: medium)
        var progressReports: [LinkTestReport] = []
        let report = try test.run(progress: { progressReports.append($0) })
        #expect(report.opened && report.openCode == 0)
        #expect(report.exchanges == 5)
        #expect(report.completed == 5)
        #expect(report.timedOut == 0 && report.failed == 0)
        #expect(report.corruptDelivered == 0 && report.duplicatesDelivered == 0)
        #expect(report.framesLost == 0 && report.retransmissions == 0)
        #expect(report.meanRoundTripMs > 0)
        #expect(report.goodputBps > 0)
        // 5 requests and 5 replies of 64 bytes, 8 bits each, in the channel time.
        #expect(abs(report.goodputBps - Double(2 * 5 * 64 * 8) / report.channelSeconds) < 1e-6 * report.goodputBps)
        // At least: hello, then per exchange a request, ack, reply, ack; then close.
        #expect(report.framesSent >= 1 + 5 * 4)
        #expect(progressReports.map(\.exchanges) == [1, 2, 3, 4, 5])
        #expect(progressReports.last?.completed == 5)
        // The run closed the link: the phone released its resources, the device went back to DEVICE READY.
        #expect(test.phone.releaseRequested)
        #expect(test.device.machine.state == .deviceReady)
        #expect(test.phone.machine.state == .waitingDevice)
        #expect(test.device.machine.statistics.messagesDelivered == 5)
        #expect(test.phone.machine.statistics.messagesDelivered == 5)
        // The report round-trips through JSON with the names scripts read.
        let json = try JSONEncoder().encode(report)
        let fields = try #require(JSONSerialization.jsonObject(with: json) as? [String: Any])
        for key in ["exchanges", "completed", "timedOut", "failed", "corruptDelivered", "duplicatesDelivered",
                    "meanRoundTripMs", "goodputBps"] {
            #expect(fields[key] != nil, "\(key) missing from \(String(decoding: json, as: UTF8.self))")
        }
        #expect(try JSONDecoder().decode(LinkTestReport.self, from: json) == report)
    }

    @Test("duplex, clean channel: 3 exchanges both ways complete")
    func duplexClean() throws {
        let options = LinkTestOptions(configuration: LinkConfiguration(mode: .duplex), count: 3, size: 48, seed: 4)
        let test = try LinkTest(options: options, medium: LoopbackMedium(impairments: LinkImpairments()))
        let report = try test.run()
        #expect(report.opened)
        #expect(report.exchanges == 3 && report.completed == 3)
        #expect(report.timedOut == 0 && report.failed == 0)
        #expect(report.corruptDelivered == 0 && report.duplicatesDelivered == 0)
        #expect(test.phone.machine.statistics.messagesDelivered == 3)
        #expect(test.device.machine.statistics.messagesDelivered == 3)
    }

    @Test("a stop request ends the run early; the report covers what ran")
    func stopEarly() throws {
        let options = LinkTestOptions(configuration: LinkConfiguration(), count: 10, size: 16, seed: 5)
        let test = try LinkTest(options: options, medium: LoopbackMedium(impairments: LinkImpairments()))
        var exchangesSeen = 0
        let report = try test.run(shouldStop: { exchangesSeen >= 2 }, progress: { exchangesSeen = $0.exchanges })
        #expect(report.exchanges == 2)
        #expect(report.completed == 2)
    }

    @Test("noisy, lossy channel: every exchange is accounted for, nothing corrupt or duplicated is delivered")
    func faultyChannel() throws {
        // 0 dB over the full 24 kHz band (about +10 dB in the tones' band), a fifth of the frames muted.
        let options = LinkTestOptions(configuration: LinkConfiguration(), count: 20, size: 32, timeout: 8, seed: 7)
        let medium = LoopbackMedium(impairments: LinkImpairments(snrDB: 0, frameLoss: 0.2, seed: 1))
        let report = try LinkTest(options: options, medium: medium).run()
        #expect(report.opened)
        #expect(report.exchanges == 20)
        #expect(report.completed + report.timedOut + report.failed == report.exchanges)
        #expect(report.corruptDelivered == 0)
        #expect(report.duplicatesDelivered == 0)
        #expect(report.framesLost > 0)  // the impairments really happened
        #expect(report.framesDamaged <= report.framesSent, "\(report.framesDamaged) damaged of \(report.framesSent) sent")
        #expect(report.retransmissions > 0)  // and the protocol recovered from some of them
        #expect(report.completed > report.exchanges / 2)
    }

    @Test("the damage counter counts damaged frames: none on a clean line, coded frames included; some, never more than were sent, below where frames survive",
          arguments: [LinkFEC.off, .on])
    func damageCounted(fec: LinkFEC) throws {
        let clean = try LinkTest(options: LinkTestOptions(configuration: LinkConfiguration(forwardErrorCorrection: fec), count: 5, size: 64, seed: 3),
                                 medium: LoopbackMedium(impairments: LinkImpairments())).run()
        #expect(clean.completed == 5 && clean.framesDamaged == 0, "\(clean)")
        if fec == .on { #expect(clean.framesCoded > 0, "\(clean)") }
        guard fec == .off else { return }
        // -4 dB over the full band (about +6 dB in the tones' band): plain frames are damaged often.
        let noisy = try LinkTest(options: LinkTestOptions(configuration: LinkConfiguration(forwardErrorCorrection: fec), count: 10, size: 64, seed: 3),
                                 medium: LoopbackMedium(impairments: LinkImpairments(snrDB: -4, seed: 3))).run()
        #expect(noisy.framesDamaged > 0 && noisy.framesDamaged <= noisy.framesSent, "\(noisy.framesDamaged) damaged of \(noisy.framesSent) sent")
        #expect(noisy.retransmissions > 0, "damage without a retransmission: \(noisy)")
    }

    @Test("clock drift between the two ends: exchanges still complete")
    func clockDrift() throws {
        let options = LinkTestOptions(configuration: LinkConfiguration(), count: 3, size: 40, seed: 9)
        for ppm in [-300.0, 300.0] {
            let medium = LoopbackMedium(impairments: LinkImpairments(clockDriftPPM: ppm))
            let report = try LinkTest(options: options, medium: medium).run()
            #expect(report.completed == 3, "drift \(ppm) ppm")
            #expect(report.corruptDelivered == 0 && report.duplicatesDelivered == 0)
        }
    }

    @Test("a channel that loses everything: open reports no device, every exchange fails")
    func deadChannel() throws {
        let options = LinkTestOptions(configuration: LinkConfiguration(), count: 3, size: 8, seed: 2)
        let medium = LoopbackMedium(impairments: LinkImpairments(frameLoss: 1, seed: 3))
        let report = try LinkTest(options: options, medium: medium).run()
        #expect(!report.opened)
        #expect(report.openCode == ReturnCode.noDevice)
        #expect(report.exchanges == 3 && report.failed == 3 && report.completed == 0)
        #expect(report.corruptDelivered == 0 && report.duplicatesDelivered == 0)
        // The hellos of three opens (LinkTest tries three times), nothing else.
        #expect(report.framesSent == 3 * LinkConfiguration().handshakeAttempts)
    }
}
