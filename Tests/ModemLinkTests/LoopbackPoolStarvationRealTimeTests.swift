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
    @Test("while every thread of the cooperative pool is busy for 3 s, no channel time passes: for an end handed a frame, and for idle ends")
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

        // Idle ends (nothing handed out, a reader waiting on each) are not left behind either: a task
        // that has yet to start, a send about to be queued, finds the channel about where it was. The
        // medium steps on until a probe has waited 20 ms, so a little channel time passes at the edges
        // of the busy stretch (0.1-0.4 s here); without the pause the medium ran on for the whole 3 s
        // (57 s of channel time). The bound is a tenth of what the medium makes of 3 s of wall time
        // when free, measured just before, so it holds on a faster or a busier machine alike. (The 3 s
        // are the load the test applies; no result waits on them.)
        let atDevice = Task { await LinkTransportTests.nextFrame(device) }
        let atPhone = Task { await LinkTransportTests.nextFrame(phone) }
        let idleFrom = pair.now, idleWall = ContinuousClock.now
        while pair.now - idleFrom < 3 { try await Task.sleep(for: .milliseconds(2)) }
        let freeSpeed = (pair.now - idleFrom) / max((ContinuousClock.now - idleWall) / .seconds(1), 1e-3)
        let t1 = pair.now
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<ProcessInfo.processInfo.activeProcessorCount {
                group.addTask { usleep(3_000_000) }
            }
        }
        let idlePassed = pair.now - t1
        print("pool busy 3 s, ends idle: \(idlePassed) s of channel time (free, 3 s of wall time make \(3 * freeSpeed) s)")
        #expect(idlePassed < 0.3 * freeSpeed,
                "\(idlePassed) s of channel time passed while the pool was busy and the ends idle (free, 3 s make \(3 * freeSpeed) s)")
        try await phone.send([4, 5, 6])
        #expect(await atDevice.value.frame == [4, 5, 6])
        try await device.send([8])
        #expect(await atPhone.value.frame == [8])
    }
}
