/// Plays mono `Float` samples on an ALSA PCM device (a sound card, or PulseAudio through alsa-lib's
/// `default`), in real time.
///
/// The device is opened at once, as 16-bit mono when it allows (else 32-bit or float, else stereo
/// with the same samples on both channels), with alsa-lib converting rate and format where the
/// device needs it. ``write(_:)`` blocks until the device has accepted every sample; an underrun
/// (the caller was too slow) is recovered and counted in ``xrunCount``. ``finish()`` plays out what
/// is buffered and closes the device.
///
/// ```swift
/// let out = try ALSAPlayback(device: "default", sampleRate: 48000)
/// try samples.withUnsafeBufferPointer { try out.write($0) }
/// try out.finish()
/// ```
///
/// An instance is used from one thread at a time.
public final class ALSAPlayback: AudioSink {
    /// The ALSA device name it was opened with, e.g. `default` or `plughw:0,0`.
    public let device: String
    /// Samples per second that ``write(_:)`` expects, in Hz.
    public let sampleRate: Int
    /// The buffer length asked for, in milliseconds.
    public let latencyMilliseconds: Int
    /// The sample encoding negotiated with the device.
    public var encoding: ALSASampleEncoding { pcm.encoding }
    /// Channels of the device stream: 1, or 2 when the device would not take mono.
    public var deviceChannelCount: Int { pcm.channelCount }
    /// The device buffer alsa-lib chose, in frames (0 if it would not say).
    public var bufferFrameCount: Int { pcm.bufferFrameCount }
    /// The device period alsa-lib chose, in frames (0 if it would not say).
    public var periodFrameCount: Int { pcm.periodFrameCount }
    /// Underruns (and suspends) recovered from since the device was opened.
    public var xrunCount: Int { pcm.xrunCount }
    /// How long ``write(_:)`` waits for a device that accepts nothing before it throws
    /// ``AudioError/Kind/deviceFailed``, in milliseconds (default 5000).
    public var stallTimeoutMilliseconds: Int {
        get { pcm.stallTimeoutMilliseconds }
        set { pcm.stallTimeoutMilliseconds = newValue }
    }

    private let pcm: ALSAPCM

    /// Opens `device` for playback through alsa-lib.
    /// - Parameters:
    ///   - device: an ALSA PCM name (see ``ALSADevices/list()``); `default` is the system's choice.
    ///   - sampleRate: samples per second, in Hz (1000...384000).
    ///   - latencyMilliseconds: the device buffer to ask for, in milliseconds (1...10000); larger
    ///     survives a busier machine, smaller answers sooner.
    /// - Throws: ``AudioError`` naming the device: ``AudioError/Kind/invalidParameter`` for a bad
    ///   argument, ``AudioError/Kind/deviceUnavailable`` (with alsa-lib's code and text) when the
    ///   device cannot be opened or does not take the rate.
    public convenience init(device: String, sampleRate: Int, latencyMilliseconds: Int = 100) throws {
        try self.init(device: device, sampleRate: sampleRate, latencyMilliseconds: latencyMilliseconds,
                      backend: ALSASystem())
    }

    /// Opens `device` for playback through `backend` (a fake one in tests).
    /// - Parameters:
    ///   - device: the PCM name passed to the backend.
    ///   - sampleRate: samples per second, in Hz (1000...384000).
    ///   - latencyMilliseconds: the device buffer to ask for, in milliseconds (1...10000).
    ///   - backend: the alsa-lib calls to use.
    /// - Throws: as ``init(device:sampleRate:latencyMilliseconds:)``.
    public init(device: String, sampleRate: Int, latencyMilliseconds: Int = 100, backend: any ALSABackend) throws {
        pcm = try ALSAPCM(device: device, direction: .playback, sampleRate: sampleRate,
                          latencyMilliseconds: latencyMilliseconds, backend: backend)
        self.device = device
        self.sampleRate = sampleRate
        self.latencyMilliseconds = latencyMilliseconds
    }

    /// Discards what is still buffered and closes the device, when ``finish()`` was not called.
    deinit {
        try? pcm.close(drain: false)
    }

    /// Queues `samples` for playing, blocking until the device has accepted all of them.
    ///
    /// The call returns when the last sample is in the device buffer, i.e. up to about
    /// ``latencyMilliseconds`` before it is heard. Samples outside -1...1 are clipped.
    /// - Throws: ``AudioError`` naming the device: ``AudioError/Kind/deviceFailed`` when the device
    ///   fails and cannot be recovered, or accepts nothing for ``stallTimeoutMilliseconds``;
    ///   ``AudioError/Kind/writeFailed`` after ``finish()``.
    public func write(_ samples: UnsafeBufferPointer<Float>) throws {
        try pcm.write(samples)
    }

    /// Plays out what is buffered (`snd_pcm_drain`) and closes the device. Calling it again does
    /// nothing.
    /// - Throws: ``AudioError/Kind/deviceFailed`` when draining or closing fails (the device is
    ///   closed anyway).
    public func finish() throws {
        try pcm.close(drain: true)
    }
}
