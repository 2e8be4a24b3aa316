/// Sample encodings that ``ALSAPlayback`` and ``ALSACapture`` negotiate with a device, in order of
/// preference.
public enum ALSASampleEncoding: String, Sendable, CaseIterable {
    /// 16-bit signed little-endian integers (`SND_PCM_FORMAT_S16_LE`); bit-exact through PulseAudio
    /// at 48000 Hz mono.
    case s16LittleEndian = "S16_LE"
    /// 32-bit signed little-endian integers (`SND_PCM_FORMAT_S32_LE`).
    case s32LittleEndian = "S32_LE"
    /// 32-bit IEEE float, little-endian (`SND_PCM_FORMAT_FLOAT_LE`).
    case float32LittleEndian = "FLOAT_LE"

    /// Bytes one sample of one channel takes.
    public var bytesPerSample: Int {
        switch self {
        case .s16LittleEndian: return 2
        case .s32LittleEndian, .float32LittleEndian: return 4
        }
    }
}

/// One open alsa-lib PCM stream (`snd_pcm_t`), one method per C function.
///
/// Every method returns what the C function returns: a count or 0 on success, a negative
/// `errno`-style code on failure (`-EAGAIN`, `-EPIPE` for an xrun, `-ESTRPIPE` when suspended, ...).
/// Instances are owned by one ``ALSAPlayback`` or ``ALSACapture`` and used from one thread at a time.
public protocol ALSAPCMStream: AnyObject {
    /// `snd_pcm_set_params` with `SND_PCM_ACCESS_RW_INTERLEAVED`.
    /// - Parameters:
    ///   - encoding: the sample encoding.
    ///   - channelCount: interleaved channels (1 for mono).
    ///   - sampleRate: frames per second, in Hz.
    ///   - softResample: lets alsa-lib's plug layer convert rate and format.
    ///   - latencyMicroseconds: the wanted buffer length, in microseconds.
    func setParameters(encoding: ALSASampleEncoding, channelCount: Int, sampleRate: Int,
                       softResample: Bool, latencyMicroseconds: Int) -> Int32

    /// `snd_pcm_get_params`: the buffer and period sizes chosen, in frames.
    func getParameters(bufferFrameCount: inout Int, periodFrameCount: inout Int) -> Int32

    /// `snd_pcm_writei`: writes up to `frameCount` interleaved frames from `buffer`.
    /// - Returns: frames written, or a negative error code.
    func writeInterleaved(_ buffer: UnsafeRawPointer, frameCount: Int) -> Int

    /// `snd_pcm_readi`: reads up to `frameCount` interleaved frames into `buffer`.
    /// - Returns: frames read, or a negative error code.
    func readInterleaved(_ buffer: UnsafeMutableRawPointer, frameCount: Int) -> Int

    /// `snd_pcm_wait`: waits until the stream is ready for I/O.
    /// - Parameter timeoutMilliseconds: the longest wait, in milliseconds.
    /// - Returns: 1 when ready, 0 on timeout, or a negative error code (`-EPIPE` after an xrun).
    func wait(timeoutMilliseconds: Int32) -> Int32

    /// `snd_pcm_recover` (silently): prepares the stream again after `-EPIPE`, `-ESTRPIPE` or `-EINTR`.
    /// - Returns: 0 when recovered, else a negative error code.
    func recover(code: Int32) -> Int32

    /// `snd_pcm_start`: starts the stream (capture streams must be started explicitly here).
    func start() -> Int32

    /// `snd_pcm_nonblock`: switches between non-blocking (`true`) and blocking (`false`) transfers.
    func setNonBlocking(_ nonBlocking: Bool) -> Int32

    /// `snd_pcm_drain`: stops after playing what is buffered.
    func drain() -> Int32

    /// `snd_pcm_drop`: stops at once, discarding what is buffered.
    func drop() -> Int32

    /// `snd_pcm_close`: closes the stream; no method may be called afterwards.
    func close() -> Int32
}
