import Foundation
import ModemLink
import Testing

/// The loopback pair's channel time while the cooperative pool is busy. The test blocks every thread
/// of the pool for 3 s of real time, which would starve any test beside it in the same process (a
/// 16 KiB exchange in LinkTransportTests then started one end ~100 s of channel time late in CI), so
/// it lives with the real-time suites, which run one at a time.
@Suite struct LoopbackPoolStarvationRealTimeTests {
    /// A transfer test failed in CI when its ends were starved of the cooperative pool for a few
    /// seconds (synchronous tests alongside on two cores): the medium stepped on after a 1 s reaction
    /// limit of wall time and the give-up time ran out in channel time. The limit now counts only
    /// time in which the pool was free.
    @Test("while every thread of the cooperative pool is busy for 3 s, an end handed a frame is waited for: no channel time passes")
    func channelTimeWaitsForAStarvedEnd() async throws {
        let pair = try LinkLoopbackPair(configuration: LinkTransportTests.duplex(baud: 4800))
        pair.start()
        defer { pair.stop() }
        let (phone, device) = try await LinkTransportTests.connect(pair)
        let frame = LinkTransportTests.frame(200, seed: 9)
        let answer = Task {
            try await phone.send(frame)
            return await LinkTransportTests.nextFrame(phone)
        }
        #expect(await LinkTransportTests.nextFrame(device).frame == frame)
        let t0 = pair.now
        // As many blocking jobs as the pool has threads (one per core), each for 3 s.
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<ProcessInfo.processInfo.activeProcessorCount {
                group.addTask { usleep(3_000_000) }
            }
        }
        let passed = pair.now - t0
        #expect(passed < 0.1, "\(passed) s of channel time passed while the pool was busy")
        try await device.send([1, 2, 3])
        #expect(try await answer.value.frame == [1, 2, 3])
    }
}
