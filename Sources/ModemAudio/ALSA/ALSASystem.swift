import CALSA
#if canImport(Glibc)
import Glibc
#endif

/// The ``ALSABackend`` that calls alsa-lib: real sound cards, PulseAudio through alsa-lib's
/// `pulse` plugin, and every other PCM that alsa-lib's configuration defines.
///
/// Creating one installs (once per process) a silent alsa-lib error handler: alsa-lib then no longer
/// prints to standard error, because every failure reaches the caller as an ``AudioError`` instead.
public struct ALSASystem: ALSABackend {
    private static let silenced: Void = swiftmodem_alsa_silence_errors()

    /// Creates the backend (and silences alsa-lib's own error printing).
    public init() {
        _ = Self.silenced
    }

    public func openPCM(_ stream: inout (any ALSAPCMStream)?, device: String, direction: ALSAStreamDirection,
                        nonBlocking: Bool) -> Int32 {
        stream = nil
        var pcm: OpaquePointer?
        let cStream = direction == .playback ? SND_PCM_STREAM_PLAYBACK : SND_PCM_STREAM_CAPTURE
        let rc = snd_pcm_open(&pcm, device, cStream, nonBlocking ? Int32(SND_PCM_NONBLOCK) : 0)
        guard rc >= 0, let pcm else { return rc < 0 ? rc : -EINVAL }
        stream = ALSASystemPCMStream(pcm: pcm)
        return 0
    }

    public func errorDescription(code: Int32) -> String {
        guard let text = snd_strerror(code) else { return "error \(code)" }
        return String(cString: text)
    }

    public func pcmNameHints(_ hints: inout [ALSANameHint]) -> Int32 {
        hints = []
        var list: UnsafeMutablePointer<UnsafeMutableRawPointer?>?
        let rc = snd_device_name_hint(-1, "pcm", &list)
        guard rc >= 0, let list else { return rc < 0 ? rc : 0 }
        defer { snd_device_name_free_hint(list) }
        var cursor = list
        while let hint = cursor.pointee {
            if let name = Self.hintValue(hint, "NAME") {
                hints.append(ALSANameHint(name: name, description: Self.hintValue(hint, "DESC") ?? "",
                                          ioid: Self.hintValue(hint, "IOID")))
            }
            cursor += 1
        }
        return 0
    }

    private static func hintValue(_ hint: UnsafeMutableRawPointer, _ id: String) -> String? {
        guard let value = snd_device_name_get_hint(hint, id) else { return nil }
        defer { free(value) }
        return String(cString: value)
    }

    public func soundCards(_ cards: inout [ALSASoundCard]) -> Int32 {
        cards = []
        var card: Int32 = -1
        while true {
            let rc = snd_card_next(&card)
            if rc < 0 { return rc }
            if card < 0 { return 0 }
            if let found = Self.describeCard(card) { cards.append(found) }
        }
    }

    private static func describeCard(_ card: Int32) -> ALSASoundCard? {
        var ctl: OpaquePointer?
        guard snd_ctl_open(&ctl, "hw:\(card)", 0) >= 0, let ctl else { return nil }
        defer { snd_ctl_close(ctl) }

        var cardName = "card \(card)"
        var cardInfo: OpaquePointer?
        if snd_ctl_card_info_malloc(&cardInfo) >= 0, let cardInfo {
            defer { snd_ctl_card_info_free(cardInfo) }
            if snd_ctl_card_info(ctl, cardInfo) >= 0, let name = snd_ctl_card_info_get_name(cardInfo) {
                cardName = String(cString: name)
            }
        }

        var pcmInfo: OpaquePointer?
        guard snd_pcm_info_malloc(&pcmInfo) >= 0, let pcmInfo else {
            return ALSASoundCard(index: Int(card), name: cardName, devices: [])
        }
        defer { snd_pcm_info_free(pcmInfo) }

        var devices: [ALSASoundCard.PCMDevice] = []
        var device: Int32 = -1
        while snd_ctl_pcm_next_device(ctl, &device) >= 0, device >= 0 {
            var found = ALSASoundCard.PCMDevice(index: Int(device), name: "", playback: false, capture: false)
            for stream in [SND_PCM_STREAM_PLAYBACK, SND_PCM_STREAM_CAPTURE] {
                snd_pcm_info_set_device(pcmInfo, UInt32(device))
                snd_pcm_info_set_subdevice(pcmInfo, 0)
                snd_pcm_info_set_stream(pcmInfo, stream)
                guard snd_ctl_pcm_info(ctl, pcmInfo) >= 0 else { continue }
                if stream == SND_PCM_STREAM_PLAYBACK { found.playback = true } else { found.capture = true }
                if found.name.isEmpty, let name = snd_pcm_info_get_name(pcmInfo) {
                    found.name = String(cString: name)
                }
            }
            if found.playback || found.capture { devices.append(found) }
        }
        return ALSASoundCard(index: Int(card), name: cardName, devices: devices)
    }

    public func reloadConfiguration() -> Int32 {
        snd_config_update_free_global()
    }
}

/// An open `snd_pcm_t`; each method is one alsa-lib call. Closed streams answer `-EBADFD`.
final class ALSASystemPCMStream: ALSAPCMStream {
    private var pcm: OpaquePointer?

    init(pcm: OpaquePointer) { self.pcm = pcm }

    deinit { if let pcm { snd_pcm_close(pcm) } }

    func setParameters(encoding: ALSASampleEncoding, channelCount: Int, sampleRate: Int,
                       softResample: Bool, latencyMicroseconds: Int) -> Int32 {
        guard let pcm else { return -EBADFD }
        guard let channels = UInt32(exactly: channelCount), let rate = UInt32(exactly: sampleRate),
              let latency = UInt32(exactly: latencyMicroseconds) else { return -EINVAL }
        let format: snd_pcm_format_t
        switch encoding {
        case .s16LittleEndian: format = SND_PCM_FORMAT_S16_LE
        case .s32LittleEndian: format = SND_PCM_FORMAT_S32_LE
        case .float32LittleEndian: format = SND_PCM_FORMAT_FLOAT_LE
        }
        return snd_pcm_set_params(pcm, format, SND_PCM_ACCESS_RW_INTERLEAVED, channels, rate,
                                  softResample ? 1 : 0, latency)
    }

    func getParameters(bufferFrameCount: inout Int, periodFrameCount: inout Int) -> Int32 {
        guard let pcm else { return -EBADFD }
        var buffer: snd_pcm_uframes_t = 0
        var period: snd_pcm_uframes_t = 0
        let rc = snd_pcm_get_params(pcm, &buffer, &period)
        if rc >= 0 {
            bufferFrameCount = Int(buffer)
            periodFrameCount = Int(period)
        }
        return rc
    }

    func writeInterleaved(_ buffer: UnsafeRawPointer, frameCount: Int) -> Int {
        guard let pcm else { return Int(-EBADFD) }
        return Int(snd_pcm_writei(pcm, buffer, snd_pcm_uframes_t(max(0, frameCount))))
    }

    func readInterleaved(_ buffer: UnsafeMutableRawPointer, frameCount: Int) -> Int {
        guard let pcm else { return Int(-EBADFD) }
        return Int(snd_pcm_readi(pcm, buffer, snd_pcm_uframes_t(max(0, frameCount))))
    }

    func wait(timeoutMilliseconds: Int32) -> Int32 {
        guard let pcm else { return -EBADFD }
        return snd_pcm_wait(pcm, timeoutMilliseconds)
    }

    func recover(code: Int32) -> Int32 {
        guard let pcm else { return -EBADFD }
        return snd_pcm_recover(pcm, code, 1)
    }

    func start() -> Int32 {
        guard let pcm else { return -EBADFD }
        return snd_pcm_start(pcm)
    }

    func setNonBlocking(_ nonBlocking: Bool) -> Int32 {
        guard let pcm else { return -EBADFD }
        return snd_pcm_nonblock(pcm, nonBlocking ? 1 : 0)
    }

    func drain() -> Int32 {
        guard let pcm else { return -EBADFD }
        return snd_pcm_drain(pcm)
    }

    func drop() -> Int32 {
        guard let pcm else { return -EBADFD }
        return snd_pcm_drop(pcm)
    }

    func close() -> Int32 {
        guard let pcm else { return -EBADFD }
        self.pcm = nil
        return snd_pcm_close(pcm)
    }
}
