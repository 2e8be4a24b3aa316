import Foundation
import ModemAudio

/// An in-memory audio line: what is written to ``sink`` is read from ``source``, in order. Reads block
/// until samples are there (or the pipe is closed), so two ``LinkDriver``s joined by a pair of pipes
/// run in lockstep, as fast as they can compute, with time counted in samples (channel time).
/// The pipe holds at most ``capacity`` samples; a write beyond that blocks until the reader catches up.
public final class AudioPipe: @unchecked Sendable {
    /// Samples per second, Hz.
    public let sampleRate: Int
    /// The most samples held before a write blocks.
    public let capacity: Int
    private let condition = NSCondition()
    private var buffer: [Float] = []
    private var readIndex = 0
    private var closed = false

    /// Creates a pipe.
    /// - Parameters:
    ///   - sampleRate: Hz.
    ///   - capacitySeconds: most audio held before writes block (default 2 s).
    public init(sampleRate: Int, capacitySeconds: Double = 2) {
        self.sampleRate = sampleRate
        capacity = max(1024, Int(Double(sampleRate) * capacitySeconds))
    }

    /// The writing end.
    public var sink: any AudioSink { Sink(pipe: self) }
    /// The reading end.
    public var source: any AudioSource { Source(pipe: self) }

    /// Ends the pipe: blocked and later reads return what is left, then 0; writes are dropped.
    public func close() {
        condition.lock()
        closed = true
        condition.broadcast()
        condition.unlock()
    }

    fileprivate func write(_ samples: UnsafeBufferPointer<Float>) {
        condition.lock()
        defer { condition.unlock() }
        var i = 0
        while i < samples.count && !closed {
            while buffer.count - readIndex >= capacity && !closed { condition.wait() }
            if closed { break }
            let n = min(samples.count - i, capacity - (buffer.count - readIndex))
            if readIndex > 0 && readIndex == buffer.count { buffer.removeAll(keepingCapacity: true); readIndex = 0 }
            buffer.append(contentsOf: samples[i ..< i + n])
            i += n
            condition.broadcast()
        }
    }

    fileprivate func read(into out: UnsafeMutableBufferPointer<Float>) -> Int {
        condition.lock()
        defer { condition.unlock() }
        while buffer.count == readIndex && !closed { condition.wait() }
        let n = min(out.count, buffer.count - readIndex)
        for k in 0..<n { out[k] = buffer[readIndex + k] }
        readIndex += n
        if readIndex > capacity {
            buffer.removeFirst(readIndex)
            readIndex = 0
        }
        condition.broadcast()
        return n
    }

    private final class Sink: AudioSink, AudioPipeEnd {
        func interrupt() { pipe.close() }
        let pipe: AudioPipe
        init(pipe: AudioPipe) { self.pipe = pipe }
        var sampleRate: Int { pipe.sampleRate }
        func write(_ samples: UnsafeBufferPointer<Float>) throws { pipe.write(samples) }
        func finish() throws { pipe.close() }
    }

    private final class Source: AudioSource, AudioPipeEnd {
        func interrupt() { pipe.close() }
        let pipe: AudioPipe
        init(pipe: AudioPipe) { self.pipe = pipe }
        var sampleRate: Int { pipe.sampleRate }
        func read(into buffer: UnsafeMutableBufferPointer<Float>) throws -> Int { pipe.read(into: buffer) }
    }
}
