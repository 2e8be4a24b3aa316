/// Records mono `Float` samples from an ALSA PCM device (a sound card, or PulseAudio through
/// alsa-lib's `default`), in real time.
///
/// The device is opened at once (16-bit mono when it allows; from a stereo-only device, channel 0
/// is returned) and starts recording at the first ``read(into:)``. Each read blocks only until some
/// audio is there and returns at most 50 ms of it, so a caller can check a stop flag (set by a
/// SIGINT/SIGTERM handler, a deadline, ...) between reads:
///
/// ```swift
/// let input = try ALSACapture(device: "default", sampleRate: 48000)
/// var block = [Float](repeating: 0, count: 2400)
/// while !stopRequested {
///     let n = try block.withUnsafeMutableBufferPointer { try input.read(into: $0) }
///     demodulator.process(block[..<n])
/// }
/// input.close()
/// ```
///
/// An overrun (the caller read too slowly and audio was lost) is recovered and counted in
/// ``xrunCount``. An instance is used from one thread at a time.
public final class ALSACapture: AudioSource {
    /// The ALSA device name it was opened with, e.g. `default` or `plughw:0,0`.
    public let device: String
    /// Samples per second that ``read(into:)`` returns, in Hz.
    public let sampleRate: Int
    /// The buffer length asked for, in milliseconds.
    public let latencyMilliseconds: Int
    /// The sample encoding negotiated with the device.
    public var encoding: ALSASampleEncoding { pcm.encoding }
    /// Channels of the device stream: 1, or 2 when the device would not give mono.
    public var deviceChannelCount: Int { pcm.channelCount }
    /// The device buffer alsa-lib chose, in frames (0 if it would not say).
    public var bufferFrameCount: Int { pcm.bufferFrameCount }
    /// The device period alsa-lib chose, in frames (0 if it would not say).
    public var periodFrameCount: Int { pcm.periodFrameCount }
    /// The most samples one ``read(into:)`` returns: 50 ms of audio.
    public var maximumReadSampleCount: Int { pcm.chunkFrameCount }
    /// Overruns (and suspends) recovered from since the device was opened.
    public var xrunCount: Int { pcm.xrunCount }
    /// How long ``read(into:)`` waits for a device that delivers nothing before it throws
    /// ``AudioError/Kind/deviceFailed``, in milliseconds (default 5000).
    public var stallTimeoutMilliseconds: Int {
        get { pcm.stallTimeoutMilliseconds }
        set { pcm.stallTimeoutMilliseconds = newValue }
    }

    private let pcm: ALSAPCM
    private var started = false

    /// Opens `device` for capture through alsa-lib.
    /// - Parameters:
    ///   - device: an ALSA PCM name (see ``ALSADevices/list()``); `default` is the system's choice.
    ///   - sampleRate: samples per second, in Hz (1000...384000).
    ///   - latencyMilliseconds: the device buffer to ask for, in milliseconds (1...10000): how long
    ///     the caller may pause between reads before audio is lost.
    /// - Throws: ``AudioError`` naming the device: ``AudioError/Kind/invalidParameter`` for a bad
    ///   argument, ``AudioError/Kind/deviceUnavailable`` (with alsa-lib's code and text) when the
    ///   device cannot be opened or does not take the rate.
    public convenience init(device: String, sampleRate: Int, latencyMilliseconds: Int = 100) throws {
        try self.init(device: device, sampleRate: sampleRate, latencyMilliseconds: latencyMilliseconds,
                      backend: ALSASystem())
    }

    /// Opens `device` for capture through `backend` (a fake one in tests).
    /// - Parameters:
    ///   - device: the PCM name passed to the backend.
    ///   - sampleRate: samples per second, in Hz (1000...384000).
    ///   - latencyMilliseconds: the device buffer to ask for, in milliseconds (1...10000).
    ///   - backend: the alsa-lib calls to use.
    /// - Throws: as ``init(device:sampleRate:latencyMilliseconds:)``.
    public init(device: String, sampleRate: Int, latencyMilliseconds: Int = 100, backend: any ALSABackend) throws {
        pcm = try ALSAPCM(device: device, direction: .capture, sampleRate: sampleRate,
                          latencyMilliseconds: latencyMilliseconds, backend: backend)
        self.device = device
        self.sampleRate = sampleRate
        self.latencyMilliseconds = latencyMilliseconds
    }

    deinit {
        try? pcm.close(drain: false)
    }

    /// Reads the next samples, blocking only until some are available.
    ///
    /// The first call starts recording. Each call returns between 1 and
    /// `min(buffer.count, maximumReadSampleCount)` samples; it returns 0 only after ``close()``
    /// (or for an empty buffer).
    /// - Throws: ``AudioError/Kind/deviceFailed`` naming the device, with alsa-lib's code, when the
    ///   device fails and cannot be recovered or delivers nothing for ``stallTimeoutMilliseconds``.
    public func read(into buffer: UnsafeMutableBufferPointer<Float>) throws -> Int {
        try pcm.read(into: buffer, started: &started)
    }

    /// Stops recording and closes the device, discarding what was not read. Calling it again does
    /// nothing; reads afterwards return 0.
    public func close() {
        try? pcm.close(drain: false)
    }
}
