import ModemAudio

/// Audio in memory, as a source: hands out `samples` and then ends.
public final class MemorySource: AudioSource {
    public let sampleRate: Int
    private let samples: [Float]
    /// Samples handed out so far.
    public private(set) var position = 0

    /// A source of `samples` at `sampleRate` Hz.
    public init(_ samples: [Float], sampleRate: Int) {
        self.samples = samples
        self.sampleRate = sampleRate
    }

    public func read(into buffer: UnsafeMutableBufferPointer<Float>) throws -> Int {
        let n = min(buffer.count, samples.count - position)
        for i in 0..<n { buffer[i] = samples[position + i] }
        position += n
        return n
    }
}

/// Audio in memory, as a sink: keeps every sample written.
public final class MemorySink: AudioSink {
    public let sampleRate: Int
    /// Every sample written so far.
    public private(set) var samples: [Float] = []
    /// Whether ``finish()`` was called.
    public private(set) var finished = false

    /// A sink at `sampleRate` Hz.
    public init(sampleRate: Int) { self.sampleRate = sampleRate }

    public func write(_ samples: UnsafeBufferPointer<Float>) throws {
        precondition(!finished, "write after finish")
        self.samples.append(contentsOf: samples)
    }

    public func finish() throws { finished = true }
}
