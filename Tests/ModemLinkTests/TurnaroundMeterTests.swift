import ModemLink
import Testing

@Suite("TurnaroundMeter")
struct TurnaroundMeterTests {
    /// One 10 ms block of 480 samples at index `block` for both ends.
    private func block(_ meter: inout TurnaroundMeter, _ block: Int, phone: [Range<Int>], device: [Range<Int>],
                       phoneOpen: Bool = true, deviceOpen: Bool = true) {
        let start = Double(block) * 0.01
        meter.note(phone: .init(spans: phone, firstSample: block * 480, count: 480, startTime: start, endTime: start + 0.01,
                                wasTransmitting: phoneOpen),
                   device: .init(spans: device, firstSample: block * 480, count: 480, startTime: start, endTime: start + 0.01,
                                 wasTransmitting: deviceOpen))
    }

    @Test("an answer's gap is counted once; runs that go on across blocks and talking on are not answers")
    func answers() {
        var m = TurnaroundMeter()
        block(&m, 0, phone: [0..<200, 200..<480], device: [])
        block(&m, 1, phone: [0..<240], device: [])                     // the phone's run ends at 0.015 s
        block(&m, 2, phone: [], device: [240..<480], deviceOpen: true) // the device answers at 0.025 s
        block(&m, 3, phone: [], device: [0..<480], phoneOpen: false)   // its run goes on; the phone's transmission has ended
        block(&m, 4, phone: [], device: [])
        block(&m, 5, phone: [120..<480], device: [])                   // so it answers opening one
        block(&m, 6, phone: [], device: [])
        block(&m, 7, phone: [0..<10], device: [])                      // the phone talks on: no answer
        #expect(m.open.count == 1 && abs(m.open[0] - 0.01) < 1e-9)
        #expect(m.opening.count == 1 && abs(m.opening[0] - (0.0525 - 0.04)) < 1e-9)
        #expect(abs(m.frameSeconds.device - 0.015) < 1e-9)
        let s = TurnaroundMeter.summary([0.3, 0.1, 0.2, 0.4])
        #expect(s.count == 4 && s.minimum == 0.1 && s.median == 0.25 && s.maximum == 0.4)
    }
}
