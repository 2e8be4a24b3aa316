import Foundation
import ModemAudio
import Synchronization
import ModemRuntime

/// Runs a ``LinkStation`` on its own thread over real audio: reads what the input hears (which paces
/// the loop: real time for a sound card, lockstep for an ``AudioPipe``), feeds it to the station and
/// plays as many samples as were read. The station's clock is the number of samples read.
///
/// Calls into the station from other threads go through ``perform(_:)``, which runs a closure on the
/// driver thread between blocks. Events are handed to `onEvent` on the driver thread.
///
/// Everything the driver is built with is fixed at ``init(station:sink:source:observe:onEvent:onFailure:)``;
/// ``start()`` runs the thread once (later calls do nothing), ``stop()`` ends it.
///
/// `@unchecked Sendable`: the station, sink and source are not `Sendable`; they are used from the driver
/// thread only once ``start()`` ran (before that, only from the thread that created the driver). The
/// request queue is a `Mutex`, the thread and its end are guarded by a condition lock.
public final class LinkDriver<Machine: LinkMachine>: @unchecked Sendable {
    /// The output.
    public let sink: any AudioSink
    /// The input.
    public let source: any AudioSource
    private let station: LinkStation<Machine>
    private let onEvent: @Sendable (LinkEvent) -> Void
    private let onFailure: @Sendable (CommunicationError, String) -> Void
    private let observe: (@Sendable (Machine) -> Void)?
    private let step: (@Sendable (LinkStation<Machine>, Double) -> Void)?
    private let requests = Mutex<[@Sendable (LinkStation<Machine>, Double) -> Void]>([])
    private let stopFlag = Atomic<Bool>(false)
    /// Guards `started` and `done`.
    private let finished = NSCondition()
    private var started = false
    private var done = false

    /// Creates a driver (not started).
    /// - Parameters:
    ///   - station: the station, used from the driver thread only from now on.
    ///   - sink: where the station's audio is played.
    ///   - source: what the station hears.
    ///   - observe: called on the driver thread with the machine before events are handed out
    ///     (to mirror its state).
    ///   - onEvent: the station's events, called on the driver thread.
    ///   - onFailure: called once if the audio fails (codes 9 playback, 10 capture); the driver then stops.
    ///   - step: called on the driver thread after each block, with the station and the block's end
    ///     time, after the block's events were handed out (a transport's timers and queues).
    public init(station: LinkStation<Machine>, sink: any AudioSink, source: any AudioSource,
                observe: (@Sendable (Machine) -> Void)? = nil,
                onEvent: @escaping @Sendable (LinkEvent) -> Void,
                onFailure: @escaping @Sendable (CommunicationError, String) -> Void,
                step: (@Sendable (LinkStation<Machine>, Double) -> Void)? = nil) {
        self.step = step
        self.station = station
        self.sink = sink
        self.source = source
        self.observe = observe
        self.onEvent = onEvent
        self.onFailure = onFailure
    }

    /// Starts the driver thread (once: a driver that was started, or stopped, is not started again).
    public func start() {
        finished.lock()
        defer { finished.unlock() }
        guard !started, !stopFlag.load(ordering: .relaxed) else { return }
        started = true
        DedicatedThread.start(name: "modem-link") { [self] in self.loop() }
    }

    /// Runs `body` on the driver thread before the next block, with the station and its clock.
    public func perform(_ body: @escaping @Sendable (LinkStation<Machine>, Double) -> Void) {
        requests.withLock { $0.append(body) }
    }

    /// Asks the loop to stop and waits until it has (the devices are then closed).
    public func stop() {
        stopFlag.store(true, ordering: .relaxed)
        (source as? AudioPipeEnd)?.interrupt()
        (sink as? AudioPipeEnd)?.interrupt()
        finished.lock()
        while started && !done { finished.wait() }
        finished.unlock()
    }

    /// Whether the loop was started and has not ended.
    public var isRunning: Bool {
        finished.lock(); defer { finished.unlock() }
        return started && !done
    }

    /// Mirrors the machine, then hands out its events (so a waiter woken by an event sees the new state).
    private func report() {
        observe?(station.machine)
        for e in station.takeEvents() { onEvent(e) }
    }

    private func loop() {
        let rate = Double(source.sampleRate)
        var block = [Float](repeating: 0, count: max(64, source.sampleRate / 50))
        var samples = 0
        var failure: (CommunicationError, String)?
        // A little silence first: the reader at the other end (or the sound server) gets going.
        do {
            let silence = [Float](repeating: 0, count: block.count)
            try silence.withUnsafeBufferPointer { try sink.write($0) }
        } catch {
            failure = (.playbackWrite, "\(error)")
        }
        while failure == nil && !stopFlag.load(ordering: .relaxed) {
            let now = Double(samples) / rate
            let pending = requests.withLock { r -> [@Sendable (LinkStation<Machine>, Double) -> Void] in
                defer { r.removeAll() }
                return r
            }
            for body in pending { body(station, now) }
            report()
            if station.releaseRequested { break }
            let n: Int
            do {
                n = try block.withUnsafeMutableBufferPointer { try source.read(into: $0) }
            } catch {
                failure = (.captureRead, "\(error)")
                break
            }
            if n == 0 { if !stopFlag.load(ordering: .relaxed) { failure = (.captureRead, "the input ended") }; break }
            samples += n
            let t = Double(samples) / rate
            block.withUnsafeBufferPointer { station.receive(UnsafeBufferPointer(rebasing: $0[0..<n]), now: t) }
            let out = station.output(count: n, now: t)
            do {
                try out.samples.withUnsafeBufferPointer { try sink.write($0) }
            } catch {
                failure = (.playbackWrite, "\(error)")
            }
            report()
            if let step {
                step(station, t)
                report()
            }
        }
        report()
        try? sink.finish()
        source.close()
        if let f = failure, !stopFlag.load(ordering: .relaxed) { onFailure(f.0, f.1) }
        finished.lock()
        done = true
        finished.broadcast()
        finished.unlock()
    }
}

/// A source that a stopping driver can wake up (an ``AudioPipe``'s reading end).
protocol AudioPipeEnd: AnyObject {
    func interrupt()
}
