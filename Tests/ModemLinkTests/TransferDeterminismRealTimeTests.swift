import Foundation
import ModemLink
import ModemMessagingHarness
import Synchronization
import Testing

/// A transfer test is a function of its seed: the loopback pair runs the medium and both stacks as
/// one discrete-event simulation, so how busy the machine is changes nothing. (Before, channel time
/// followed the wall clock while the applications reacted, and the same seed gave 981, 936 and 677
/// bit/s in three runs.) The busy run keeps every core busy with spinning threads; it lives with the
/// real-time suites, which run one at a time, so it does not slow the tests beside it.
@Suite struct TransferDeterminismRealTimeTests {
    /// Threads that spin until stopped (load, not a clock: nothing waits on them).
    final class Hogs: Sendable {
        private let stop = Atomic<Bool>(false)
        init(count: Int) {
            for _ in 0..<count {
                let t = Thread { [self] in
                    var x: UInt64 = 1
                    while !self.stop.load(ordering: .relaxed) { x = x &* 6364136223846793005 &+ 1 }
                    if x == 0 { print("") }
                }
                t.start()
            }
        }
        func end() { stop.store(true, ordering: .relaxed) }
    }

    @Test("the same seed gives the same report idle and with every core busy, over Noise sessions and plain records, with a cut")
    func sameSeedSameReportUnderLoad() async throws {
        for plain in [false, true] {
            let options = TransferTestOptions(baudRate: 1200, size: 6000, snrDB: 3, frameLoss: 0.1, cuts: 1,
                                              seed: 2, keepalive: 5, plain: plain)
            let idle = try await TransferTest(options: options).run()
            let hogs = Hogs(count: 2 * ProcessInfo.processInfo.activeProcessorCount)
            let busy: TransferTestReport
            do {
                busy = try await TransferTest(options: options).run()
                hogs.end()
            } catch {
                hogs.end()
                throw error
            }
            #expect(idle.completed && idle.sha256Match, "plain \(plain): \(idle.json)")
            #expect(idle == busy, "plain \(plain): idle \(idle.json), busy \(busy.json)")
        }
    }
}
