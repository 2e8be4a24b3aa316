#if canImport(Glibc)
import Glibc
#endif
import ModemRuntime

/// An open, configured ALSA PCM stream with the logic ``ALSAPlayback`` and ``ALSACapture`` share:
/// opening and format negotiation, `Float` conversion, waiting with a stall watchdog, xrun
/// recovery, and turning alsa-lib codes into ``AudioError``s that name the device.
///
/// Streams are opened non-blocking: transfers never sleep inside alsa-lib, all waiting happens in
/// `snd_pcm_wait` with a short timeout, so a stalled device becomes an error instead of a hang.
final class ALSAPCM {
    /// Valid sample rates, in Hz.
    static let sampleRateRange = 1000...384_000
    /// Valid latencies, in milliseconds.
    static let latencyRange = 1...10_000
    /// The longest single `snd_pcm_wait`, in milliseconds.
    static let pollMilliseconds: Int32 = 50
    /// How many recoveries in a row, with no samples moved in between, make a device failed.
    static let maxRecoveriesWithoutProgress = 16

    let device: String
    let direction: ALSAStreamDirection
    let sampleRate: Int
    let encoding: ALSASampleEncoding
    /// Channels of the device stream (1, or 2 when the device would not take mono).
    let channelCount: Int
    /// Frames converted per transfer (at most 50 ms).
    let chunkFrameCount: Int
    private(set) var bufferFrameCount = 0
    private(set) var periodFrameCount = 0
    private(set) var xrunCount = 0
    var stallTimeoutMilliseconds = 5000

    private let backend: any ALSABackend
    private var stream: (any ALSAPCMStream)?
    private let scratch: UnsafeMutableRawPointer
    private var progressTime = ContinuousClock.now
    private var recoveriesWithoutProgress = 0
    private var emptyWakeups = 0

    var isOpen: Bool { stream != nil }
    /// One period in milliseconds (at least 1), the wait after a wake-up that moved nothing.
    private var periodMilliseconds: Int { max(1, periodFrameCount * 1000 / max(1, sampleRate)) }
    private var frameByteCount: Int { channelCount * encoding.bytesPerSample }
    private var directionName: String { direction == .playback ? "playback" : "capture" }

    init(device: String, direction: ALSAStreamDirection, sampleRate: Int, latencyMilliseconds: Int,
         backend: any ALSABackend) throws {
        guard !device.isEmpty, !device.utf8.contains(0) else {
            throw AudioError(.invalidParameter, subject: device.isEmpty ? "(empty device name)" : device,
                             message: "not a valid ALSA device name")
        }
        guard Self.sampleRateRange.contains(sampleRate) else {
            throw AudioError(.invalidParameter, subject: device,
                             message: "sample rate \(sampleRate) Hz is outside \(Self.sampleRateRange.lowerBound)...\(Self.sampleRateRange.upperBound)")
        }
        guard Self.latencyRange.contains(latencyMilliseconds) else {
            throw AudioError(.invalidParameter, subject: device,
                             message: "latency \(latencyMilliseconds) ms is outside \(Self.latencyRange.lowerBound)...\(Self.latencyRange.upperBound)")
        }
        self.device = device
        self.direction = direction
        self.sampleRate = sampleRate
        self.backend = backend
        let dirName = direction == .playback ? "playback" : "capture"

        var opened: (any ALSAPCMStream)?
        let rc = backend.openPCM(&opened, device: device, direction: direction, nonBlocking: true)
        guard rc >= 0, let stream = opened else {
            let code = rc < 0 ? rc : -EINVAL
            throw AudioError(.deviceUnavailable, subject: device,
                             message: "cannot open the ALSA \(dirName) device: snd_pcm_open failed: \(backend.errorDescription(code: code))",
                             code: code)
        }

        // Mono S16 first (bit-exact through PulseAudio); then the other encodings; then stereo for
        // raw hardware that will not do mono.
        var chosen: (ALSASampleEncoding, Int)?
        var firstFailure: Int32 = 0
        search: for channels in [1, 2] {
            for candidate in ALSASampleEncoding.allCases {
                let rc = stream.setParameters(encoding: candidate, channelCount: channels, sampleRate: sampleRate,
                                              softResample: true, latencyMicroseconds: latencyMilliseconds * 1000)
                if rc >= 0 { chosen = (candidate, channels); break search }
                if firstFailure == 0 { firstFailure = rc }
                // Only "not supported" is worth another combination; anything else is final.
                if rc != -EINVAL { break search }
            }
        }
        guard let chosen else {
            _ = stream.close()
            let code = firstFailure < 0 ? firstFailure : -EINVAL
            throw AudioError(.deviceUnavailable, subject: device,
                             message: "cannot configure the ALSA \(dirName) device for \(sampleRate) Hz (tried mono and stereo, S16_LE, S32_LE, FLOAT_LE): snd_pcm_set_params failed: \(backend.errorDescription(code: code))",
                             code: code)
        }
        let (encoding, channels) = chosen
        self.encoding = encoding
        self.channelCount = channels
        self.stream = stream

        var bufferFrames = 0, periodFrames = 0
        if stream.getParameters(bufferFrameCount: &bufferFrames, periodFrameCount: &periodFrames) >= 0 {
            bufferFrameCount = bufferFrames
            periodFrameCount = periodFrames
        }
        chunkFrameCount = max(1, sampleRate / 20)
        let scratchByteCount = chunkFrameCount * channels * encoding.bytesPerSample
        scratch = UnsafeMutableRawPointer.allocate(byteCount: scratchByteCount, alignment: 16)
        // Zeroed: a device that reports frames without writing them (alsa-lib's `null`) gives silence.
        scratch.initializeMemory(as: UInt8.self, repeating: 0, count: scratchByteCount)
    }

    deinit {
        if let stream {
            _ = stream.drop()
            _ = stream.close()
        }
        scratch.deallocate()
    }

    // MARK: Errors

    func error(_ kind: AudioError.Kind, _ what: String, function: String, code: Int32) -> AudioError {
        AudioError(kind, subject: device,
                   message: "\(what): \(function) failed: \(backend.errorDescription(code: code))", code: code)
    }

    func closedError() -> AudioError {
        AudioError(direction == .playback ? .writeFailed : .readFailed, subject: device,
                   message: "the ALSA \(directionName) device is already closed")
    }

    // MARK: Transfers

    /// Writes all of `samples` (mono; duplicated to every device channel), blocking until accepted.
    func write(_ samples: UnsafeBufferPointer<Float>) throws {
        guard let stream else { throw closedError() }
        guard let base = samples.baseAddress, samples.count > 0 else { return }
        beginCall()
        var offset = 0
        while offset < samples.count {
            let frames = min(chunkFrameCount, samples.count - offset)
            encode(base + offset, frameCount: frames)
            var done = 0
            while done < frames {
                let n = stream.writeInterleaved(scratch + done * frameByteCount, frameCount: frames - done)
                if n > 0 {
                    done += n
                    noteProgress()
                } else if n == 0 || n == -Int(EAGAIN) {
                    try waitUntilReady(stream)
                } else {
                    try recover(stream, from: Int32(clamping: n), function: "snd_pcm_writei")
                }
            }
            offset += frames
        }
    }

    /// Reads at most 50 ms of audio, blocking only until some is available.
    /// - Returns: samples read (at least 1), or 0 when the stream is closed.
    func read(into buffer: UnsafeMutableBufferPointer<Float>, started: inout Bool) throws -> Int {
        guard let stream else { return 0 }
        guard let base = buffer.baseAddress, buffer.count > 0 else { return 0 }
        beginCall()
        if !started {
            let rc = stream.start()
            if rc < 0 && rc != -EBADFD {   // -EBADFD: already running
                throw error(.deviceFailed, "cannot start the ALSA capture device", function: "snd_pcm_start", code: rc)
            }
            started = true
        }
        let wanted = min(buffer.count, chunkFrameCount)
        while true {
            let n = stream.readInterleaved(scratch, frameCount: wanted)
            if n > 0 {
                let frames = min(n, wanted)
                decode(frameCount: frames, into: base)
                noteProgress()
                return frames
            } else if n == 0 || n == -Int(EAGAIN) {
                try waitUntilReady(stream)
            } else {
                try recover(stream, from: Int32(clamping: n), function: "snd_pcm_readi")
            }
        }
    }

    /// Plays what is buffered (playback, `drain: true`) or discards it, then closes. Idempotent.
    func close(drain: Bool) throws {
        guard let stream else { return }
        self.stream = nil
        var failure: AudioError?
        if drain {
            _ = stream.setNonBlocking(false)
            let rc = stream.drain()
            // -EPIPE/-ESTRPIPE: the buffer already ran dry, so everything was played.
            if rc < 0 && rc != -EPIPE && rc != -ESTRPIPE {
                failure = error(.deviceFailed, "cannot drain the ALSA playback device", function: "snd_pcm_drain", code: rc)
            }
        } else {
            _ = stream.drop()
        }
        let rc = stream.close()
        if failure == nil && rc < 0 {
            failure = error(.deviceFailed, "cannot close the ALSA \(directionName) device", function: "snd_pcm_close", code: rc)
        }
        if let failure { throw failure }
    }

    // MARK: Waiting and recovery

    private func beginCall() {
        progressTime = .now
        recoveriesWithoutProgress = 0
        emptyWakeups = 0
    }

    private func noteProgress() {
        progressTime = .now
        recoveriesWithoutProgress = 0
        emptyWakeups = 0
    }

    private func checkStall() throws {
        let limit = Duration.milliseconds(max(1, stallTimeoutMilliseconds))
        if ContinuousClock.now - progressTime > limit {
            let what = direction == .playback ? "accepted no samples" : "delivered no samples"
            throw AudioError(.deviceFailed, subject: device,
                             message: "the ALSA \(directionName) device \(what) for \(stallTimeoutMilliseconds) ms",
                             code: -ETIMEDOUT)
        }
    }

    private func waitUntilReady(_ stream: any ALSAPCMStream) throws {
        try checkStall()
        let rc = stream.wait(timeoutMilliseconds: Self.pollMilliseconds)
        if rc > 0 {
            // "Ready" yet the transfer moved nothing (a plugin whose readiness runs ahead of its
            // data): do not spin. From the second such wake-up on, wait on the runtime's event loop
            // for the time one period takes to fill or drain; the stall timeout still bounds it all.
            emptyWakeups += 1
            if emptyWakeups > 1 {
                var nothing: [pollfd] = []
                SocketWaiter.shared.block(&nothing, timeoutMilliseconds: periodMilliseconds)
            }
            return
        }
        if rc == 0 || rc == -EINTR || rc == -EAGAIN { return }
        try recover(stream, from: rc, function: "snd_pcm_wait")
    }

    private func recover(_ stream: any ALSAPCMStream, from code: Int32, function: String) throws {
        if code == -EINTR { return }   // a signal: just try again
        guard code == -EPIPE || code == -ESTRPIPE else {
            throw error(.deviceFailed, "the ALSA \(directionName) device failed", function: function, code: code)
        }
        recoveriesWithoutProgress += 1
        let rc = stream.recover(code: code)
        if rc < 0 || recoveriesWithoutProgress > Self.maxRecoveriesWithoutProgress {
            let failed = rc < 0 ? rc : code
            throw error(.deviceFailed,
                        "the ALSA \(directionName) device did not recover from \(code == -EPIPE ? (direction == .playback ? "an underrun" : "an overrun") : "a suspend")",
                        function: rc < 0 ? "snd_pcm_recover" : function, code: failed)
        }
        xrunCount += 1
        if direction == .capture {
            // A recovered capture stream is prepared, not running; restart it.
            let started = stream.start()
            if started < 0 && started != -EBADFD {
                throw error(.deviceFailed, "cannot restart the ALSA capture device", function: "snd_pcm_start", code: started)
            }
        }
        try checkStall()
    }

    // MARK: Sample conversion

    private func encode(_ source: UnsafePointer<Float>, frameCount: Int) {
        let channels = channelCount
        switch encoding {
        case .s16LittleEndian:
            let out = scratch.bindMemory(to: Int16.self, capacity: frameCount * channels)
            for i in 0..<frameCount {
                let v = Self.int16(source[i]).littleEndian
                for c in 0..<channels { out[i * channels + c] = v }
            }
        case .s32LittleEndian:
            let out = scratch.bindMemory(to: Int32.self, capacity: frameCount * channels)
            for i in 0..<frameCount {
                let v = Self.int32(source[i]).littleEndian
                for c in 0..<channels { out[i * channels + c] = v }
            }
        case .float32LittleEndian:
            let out = scratch.bindMemory(to: UInt32.self, capacity: frameCount * channels)
            for i in 0..<frameCount {
                let x = source[i]
                let v = (x.isNaN ? 0 : min(1, max(-1, x))).bitPattern.littleEndian
                for c in 0..<channels { out[i * channels + c] = v }
            }
        }
    }

    /// Channel 0 of each frame in `scratch`, as `Float`.
    private func decode(frameCount: Int, into target: UnsafeMutablePointer<Float>) {
        let channels = channelCount
        switch encoding {
        case .s16LittleEndian:
            let p = scratch.bindMemory(to: Int16.self, capacity: frameCount * channels)
            for i in 0..<frameCount { target[i] = Float(Int16(littleEndian: p[i * channels])) / 32768 }
        case .s32LittleEndian:
            let p = scratch.bindMemory(to: Int32.self, capacity: frameCount * channels)
            for i in 0..<frameCount { target[i] = Float(Double(Int32(littleEndian: p[i * channels])) / 2_147_483_648) }
        case .float32LittleEndian:
            let p = scratch.bindMemory(to: UInt32.self, capacity: frameCount * channels)
            for i in 0..<frameCount {
                let x = Float(bitPattern: UInt32(littleEndian: p[i * channels]))
                target[i] = x.isNaN ? 0 : x
            }
        }
    }

    /// Full scale is 32768, so `k / 32768` comes back as exactly `k`; clipped, NaN is silence.
    @inline(__always) static func int16(_ x: Float) -> Int16 {
        let v = (x * 32768).rounded()
        if v.isNaN { return 0 }
        if v >= 32767 { return 32767 }
        if v <= -32768 { return -32768 }
        return Int16(v)
    }

    @inline(__always) static func int32(_ x: Float) -> Int32 {
        let v = (Double(x) * 2_147_483_648).rounded()
        if v.isNaN { return 0 }
        if v >= 2_147_483_647 { return Int32.max }
        if v <= -2_147_483_648 { return Int32.min }
        return Int32(v)
    }
}
