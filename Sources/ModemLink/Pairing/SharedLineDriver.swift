import ModemAudio
import ModemDSP
import ModemRuntime

/// Runs one ``SharedLineFrameLine`` over real audio (an ALSA device on which this end both plays and
/// records, such as a sound server's null sink), blocking the calling thread: reads a block of what
/// the line carries (which paces the loop in real time), hands the client what was heard, plays as
/// many samples as were read. The line's clock is the number of samples read.
public final class SharedLineDriver {
    /// The line end.
    public let line: SharedLineFrameLine
    /// Where the line's audio is played.
    public let sink: any AudioSink
    /// What this end hears.
    public let source: any AudioSource
    /// Samples per block.
    public let blockSamples: Int
    /// Silence played before the first block, samples: how far the playback runs ahead of the capture.
    public let prerollSamples: Int

    /// Creates a driver. Open the capture before the playback, so the first sound played is heard.
    /// - Parameters:
    ///   - blockSamples: samples per step (default: 10 ms at the source's rate).
    ///   - prerollSeconds: silence played first, so the playback never runs dry while the capture
    ///     delivers in bursts (a sound server's fragments); it adds as much latency (default 20 ms).
    public init(line: SharedLineFrameLine, sink: any AudioSink, source: any AudioSource, blockSamples: Int? = nil,
                prerollSeconds: Double = 0.02) {
        self.line = line
        self.sink = sink
        self.source = source
        self.blockSamples = max(16, blockSamples ?? source.sampleRate / 100)
        prerollSamples = max(0, Int(prerollSeconds * Double(source.sampleRate)))
    }

    /// Runs until the client asked to stop and everything queued was handed to the sink, or
    /// `shouldStop` returns true (checked once per block). The client is first called with
    /// ``SharedLineInput/tick`` at time 0, before anything is read. Returns the line's clock at the end.
    ///
    /// The sink is not drained: what is still buffered in it is the caller's to play out
    /// (`finish()`) or to drop.
    /// - Throws: what the audio devices report, or ``AudioError/Kind/deviceFailed`` when the input ends.
    @discardableResult
    public func run(shouldStop: () -> Bool = { false }, client: (SharedLineInput, Double) -> [SharedLineCommand]) throws -> Double {
        let rate = Double(source.sampleRate)
        var stopping = line.apply(client(.tick, 0))
        // Silence ahead of the playback: the loop then writes as much as it reads.
        let silence = [Float](repeating: 0, count: prerollSamples)
        try silence.withUnsafeBufferPointer { try sink.write($0) }
        var block = [Float](repeating: 0, count: blockSamples)
        var samples = 0
        while !shouldStop() {
            let n = try block.withUnsafeMutableBufferPointer { try source.read(into: $0) }
            if n == 0 { throw AudioError(.deviceFailed, subject: "capture", message: "the input ended") }
            samples += n
            let now = Double(samples) / rate
            let r = block.withUnsafeBufferPointer { p in
                line.step(UnsafeBufferPointer(rebasing: p[0..<n]), count: n, now: now, stopping: &stopping, client: client)
            }
            try r.samples.withUnsafeBufferPointer { try sink.write($0) }
            if r.done { break }
        }
        return Double(samples) / rate
    }
}

/// Several ``SharedLineFrameLine`` ends on one in-memory line, in channel time: each step, every end
/// plays a block, the blocks are summed (with optional white noise) and every end hears the sum,
/// its own sound included, one block later. Deterministic: no threads, time is counted in samples.
public final class InMemorySharedLine {
    /// One end: its line and its client.
    public struct End {
        /// The line end.
        public let line: SharedLineFrameLine
        /// When it joins the line, seconds (before that it neither plays nor hears).
        public let startSeconds: Double
        /// Its client.
        public let client: (SharedLineInput, Double) -> [SharedLineCommand]
        /// Creates an end.
        public init(line: SharedLineFrameLine, startSeconds: Double = 0, client: @escaping (SharedLineInput, Double) -> [SharedLineCommand]) {
            self.line = line
            self.startSeconds = startSeconds
            self.client = client
        }
    }

    /// Samples per second.
    public let sampleRate: Int
    /// Samples per step.
    public let blockSamples: Int
    /// The clock, seconds.
    public private(set) var now = 0.0
    private var ends: [End]
    private var started: [Bool]
    private var stopping: [Bool]
    private var finished: [Bool]
    private var heard: [Float]
    private var noise: SplitMix64
    private let noiseRMS: Float

    /// Creates a line.
    /// - Parameters:
    ///   - ends: the ends.
    ///   - sampleRate: Hz (the ends' modems must use it).
    ///   - blockSeconds: step (default 10 ms).
    ///   - noiseRMS: white Gaussian noise added to what everyone hears (default none).
    ///   - seed: the noise seed.
    public init(ends: [End], sampleRate: Int, blockSeconds: Double = 0.01, noiseRMS: Float = 0, seed: UInt64 = 1) {
        self.ends = ends
        self.sampleRate = sampleRate
        blockSamples = max(16, Int(Double(sampleRate) * blockSeconds))
        started = Array(repeating: false, count: ends.count)
        stopping = Array(repeating: false, count: ends.count)
        finished = Array(repeating: false, count: ends.count)
        heard = Array(repeating: 0, count: blockSamples)
        noise = SplitMix64(seed: seed)
        self.noiseRMS = noiseRMS
    }

    /// Whether end `i` has finished (asked to stop and played everything).
    public func isFinished(_ i: Int) -> Bool { finished[i] }

    /// Steps until every end finished or `seconds` of channel time passed; returns the clock.
    @discardableResult
    public func run(seconds: Double) -> Double {
        while now < seconds && finished.contains(false) { step() }
        return now
    }

    /// Advances every end by one block.
    public func step() {
        let t = now + Double(blockSamples) / Double(sampleRate)
        var mix = [Float](repeating: 0, count: blockSamples)
        for i in ends.indices where !finished[i] {
            let e = ends[i]
            guard now >= e.startSeconds else { continue }
            if !started[i] {
                started[i] = true
                if e.line.apply(e.client(.tick, now)) { stopping[i] = true }
            }
            let r = heard.withUnsafeBufferPointer { e.line.step($0, count: blockSamples, now: t, stopping: &stopping[i], client: e.client) }
            for k in 0..<blockSamples { mix[k] += r.samples[k] }
            if r.done { finished[i] = true }
        }
        if noiseRMS > 0 {
            for k in 0..<blockSamples { mix[k] += noiseRMS * Float(noise.gaussian()) }
        }
        heard = mix
        now = t
    }
}
