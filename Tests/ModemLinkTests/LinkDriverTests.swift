import Foundation
import ModemAudio
import ModemLink
import Synchronization
import ProcessTestSupport
import Testing

/// A source of `total` samples of silence (then the end), or one that throws after `failAfter` reads.
private final class CountingSource: AudioSource, @unchecked Sendable {
    struct Failure: Error {}
    let sampleRate: Int
    private let total: Int
    private let failAfter: Int?
    private let state = Mutex((read: 0, calls: 0))
    init(sampleRate: Int, total: Int, failAfter: Int? = nil) {
        self.sampleRate = sampleRate
        self.total = total
        self.failAfter = failAfter
    }
    var samplesRead: Int { state.withLock { $0.read } }
    func read(into buffer: UnsafeMutableBufferPointer<Float>) throws -> Int {
        try state.withLock { s in
            s.calls += 1
            if let f = failAfter, s.calls > f { throw Failure() }
            let n = min(buffer.count, total - s.read)
            for i in 0..<n { buffer[i] = 0 }
            s.read += n
            return n
        }
    }
}

/// Counts what is written; throws on the `failAt`th write when asked to.
private final class CountingSink: AudioSink, @unchecked Sendable {
    struct Failure: Error {}
    let sampleRate: Int
    private let failAt: Int?
    private let state = Mutex((written: 0, writes: 0, finished: 0))
    init(sampleRate: Int, failAt: Int? = nil) {
        self.sampleRate = sampleRate
        self.failAt = failAt
    }
    var written: Int { state.withLock { $0.written } }
    var finishCount: Int { state.withLock { $0.finished } }
    func write(_ samples: UnsafeBufferPointer<Float>) throws {
        try state.withLock { s in
            s.writes += 1
            if let f = failAt, s.writes >= f { throw Failure() }
            s.written += samples.count
        }
    }
    func finish() throws { state.withLock { $0.finished += 1 } }
}

/// A device station (its machine attached, so it has a state to observe).
private func deviceStation(sampleRate: Int) throws -> LinkStation<DeviceStateMachine> {
    let config = LinkConfiguration()
    var machine = DeviceStateMachine(configuration: config)
    machine.attach()
    return LinkStation(machine: machine, modem: try LinkModem(configuration: config, sampleRate: sampleRate))
}

/// Collects the driver's callbacks; a failure report (the last call of a loop that ends by itself)
/// wakes the waits.
private final class Calls: Sendable {
    let failures = Observed<[CommunicationError]>([])
    let events = Mutex<[LinkEvent]>([])
    let states = Mutex<[DeviceStateMachine.State]>([])
    let clock = Mutex<[Double]>([])
}

@Suite("LinkDriver")
struct LinkDriverTests {
    @Test("plays as many samples as it reads (after one block of lead-in silence), then reports the end of the input",
          arguments: [8000, 16000, 44100])
    func samplesInSamplesOut(sampleRate: Int) async throws {
        let total = sampleRate * 2 + 123   // not a whole number of blocks
        let source = CountingSource(sampleRate: sampleRate, total: total)
        let sink = CountingSink(sampleRate: sampleRate)
        let calls = Calls()
        let driver = LinkDriver(station: try deviceStation(sampleRate: sampleRate), sink: sink, source: source,
                                observe: { m in calls.states.withLock { $0.append(m.state) } },
                                onEvent: { e in calls.events.withLock { $0.append(e) } },
                                onFailure: { c, _ in calls.failures.append(c) })
        #expect(!driver.isRunning)
        driver.start()
        try await calls.failures.wait(for: "the end of the input reported") { !$0.isEmpty }
        driver.stop()   // returns once the loop has ended (it reports its failure just before)
        #expect(!driver.isRunning)
        let block = max(64, sampleRate / 50)
        #expect(source.samplesRead == total)
        #expect(sink.written == total + block)
        #expect(sink.finishCount == 1)
        #expect(calls.failures.value == [.captureRead])  // the input ended by itself
        let states = calls.states.withLock { $0 }
        #expect(!states.isEmpty)
        #expect(states.allSatisfy { $0 == .deviceReady })  // attached, nobody said hello
        #expect(calls.events.withLock { $0 }.isEmpty)
    }

    @Test("perform runs on the driver thread, in order, with the clock in seconds of audio read")
    func performAndClock() async throws {
        let rate = 16000
        // Reads as fast as it can (nothing paces it) and does not end before the driver is stopped.
        let source = CountingSource(sampleRate: rate, total: Int.max / 2)
        let sink = CountingSink(sampleRate: rate)
        let calls = Calls()
        let driver = LinkDriver(station: try deviceStation(sampleRate: rate), sink: sink, source: source,
                                onEvent: { _ in }, onFailure: { c, _ in calls.failures.append(c) })
        let order = Observed<[Int]>([])
        for i in 0..<5 { driver.perform { _, now in calls.clock.withLock { $0.append(now) }; order.append(i) } }
        driver.start()
        try await order.wait(for: "the first 5 performed") { $0.count >= 5 }
        for i in 5..<10 {
            driver.perform { _, now in calls.clock.withLock { $0.append(now) }; order.append(i) }
        }
        try await order.wait(for: "all 10 performed") { $0.count >= 10 }
        driver.stop()
        #expect(order.value == Array(0..<10))
        let clock = calls.clock.withLock { $0 }
        #expect(clock.first == 0)                          // queued before start: run before the first read
        #expect(clock == clock.sorted())
        #expect(clock.allSatisfy { $0 >= 0 && $0 <= Double(source.samplesRead) / Double(rate) })
        #expect(clock.last! > 0)  // the second batch came after some audio was read
        #expect(calls.failures.value.isEmpty)    // stopped, not failed
    }

    @Test("a failing input reports capture-read, a failing output playback-write, once, and the loop ends")
    func failures() async throws {
        let rate = 8000
        for (source, sink, expected) in [
            (CountingSource(sampleRate: rate, total: rate * 100, failAfter: 3), CountingSink(sampleRate: rate), CommunicationError.captureRead),
            (CountingSource(sampleRate: rate, total: rate * 100), CountingSink(sampleRate: rate, failAt: 4), .playbackWrite),
            (CountingSource(sampleRate: rate, total: rate * 100), CountingSink(sampleRate: rate, failAt: 1), .playbackWrite),
        ] {
            let calls = Calls()
            let driver = LinkDriver(station: try deviceStation(sampleRate: rate), sink: sink, source: source,
                                    onEvent: { _ in }, onFailure: { c, _ in calls.failures.append(c) })
            driver.start()
            try await calls.failures.wait(for: "the failure reported") { !$0.isEmpty }
            driver.stop()   // returns once the loop has ended
            #expect(!driver.isRunning)
            #expect(calls.failures.value == [expected])
            #expect(sink.finishCount == 1)
            #expect(source.samplesRead < rate * 100)
        }
    }

    @Test("stop before start: nothing runs; start after stop does nothing; start twice runs one loop")
    func lifecycle() async throws {
        let rate = 8000
        let s1 = CountingSource(sampleRate: rate, total: rate * 100)
        let d1 = LinkDriver(station: try deviceStation(sampleRate: rate), sink: CountingSink(sampleRate: rate), source: s1,
                            onEvent: { _ in }, onFailure: { _, _ in })
        d1.stop()
        d1.start()
        // start() marks a loop started before it runs one: not running now means none was started.
        #expect(!d1.isRunning)
        #expect(s1.samplesRead == 0)

        // Started twice: one loop reads the input, so it reads it exactly once to the end.
        let total = rate * 2
        let s2 = CountingSource(sampleRate: rate, total: total)
        let sink2 = CountingSink(sampleRate: rate)
        let calls = Calls()
        let d2 = LinkDriver(station: try deviceStation(sampleRate: rate), sink: sink2, source: s2,
                            onEvent: { _ in }, onFailure: { c, _ in calls.failures.append(c) })
        d2.start()
        d2.start()
        try await calls.failures.wait(for: "the end of the input reported") { !$0.isEmpty }
        d2.stop()   // returns once the loop has ended
        #expect(!d2.isRunning)
        #expect(sink2.finishCount == 1)
        #expect(calls.failures.value.count == 1)
        #expect(sink2.written == total + max(64, rate / 50))
    }
}
