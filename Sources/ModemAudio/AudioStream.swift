/// A source of mono audio samples: a file, a capture device, an in-memory channel.
///
/// Samples are `Float` in the range -1...1 (full scale). Implementations stream: reading never
/// loads more than the caller's buffer, so memory does not grow with the length of the input.
public protocol AudioSource: AnyObject {
    /// Samples per second of what ``read(into:)`` returns, in Hz.
    var sampleRate: Int { get }
    /// Fills the start of `buffer` with up to `buffer.count` samples.
    /// - Returns: the number of samples written; 0 only at the end of the stream.
    /// - Throws: ``AudioError`` when the operating system or a library reports a failure.
    func read(into buffer: UnsafeMutableBufferPointer<Float>) throws -> Int
    /// Releases what the source holds (a device, a file); reading afterwards returns 0 or throws.
    /// Calling it twice is harmless. The default does nothing.
    func close()
}

extension AudioSource {
    /// Nothing to release.
    public func close() {}
}

/// A sink of mono audio samples: a file, a playback device, an in-memory channel.
public protocol AudioSink: AnyObject {
    /// Samples per second that ``write(_:)`` expects, in Hz.
    var sampleRate: Int { get }
    /// Writes all of `samples` (blocking for devices until they are accepted).
    func write(_ samples: UnsafeBufferPointer<Float>) throws
    /// Flushes what is buffered (drains a device, finalises a file header) and releases the sink.
    /// Calling it twice is harmless.
    func finish() throws
}
