#if canImport(Glibc)
import Glibc
#endif

/// A PCM device that alsa-lib offers, as ``ALSADevices`` lists it.
public struct ALSADeviceInfo: Sendable, Hashable {
    /// The name to open it by: pass it as `device:` to ``ALSAPlayback`` or ``ALSACapture`` (and as
    /// `--device` to the `modem` tool), e.g. `default`, `plughw:0,0`.
    public var name: String
    /// A one-line human description (may be empty).
    public var description: String
    /// Whether it can play.
    public var playback: Bool
    /// Whether it can record.
    public var capture: Bool

    /// Creates a device description.
    public init(name: String, description: String, playback: Bool, capture: Bool) {
        self.name = name
        self.description = description
        self.playback = playback
        self.capture = capture
    }
}

/// Lists the ALSA PCM devices of this machine.
///
/// The list joins two sources: the names alsa-lib's configuration advertises
/// (`snd_device_name_hint`: `default`, `pulse`, `null`, `sysdefault:CARD=...`, ...), and for each
/// sound card present its `hw:C,D` (raw hardware) and `plughw:C,D` (with conversion) names. `default`
/// comes first when alsa-lib lists it; names appear once.
public enum ALSADevices {
    /// The devices alsa-lib knows; empty when it can list none (see ``scan(backend:)`` for the error).
    public static func list() -> [ALSADeviceInfo] {
        (try? scan(backend: ALSASystem())) ?? []
    }

    /// PCM names that alsa-lib's plugin packages (libasound2-plugins) define but that are no sound
    /// device: rate converters and filters that need another PCM under them (`samplerate`, `upmix`,
    /// ...). They open, then fail or wrap `default`; ``scan(backend:all:)`` leaves them out unless asked.
    public static let converterPlugins: Set<String> = [
        "lavrate", "lavrate_higher", "lavrate_high", "lavrate_fast", "lavrate_faster",
        "samplerate", "samplerate_best", "samplerate_medium", "samplerate_order", "samplerate_linear",
        "speexrate", "speexrate_best", "speexrate_medium", "speex", "upmix", "vdownmix", "a52", "lav",
    ]

    /// Whether a sound server or device that a plugin PCM needs is there: `jack` needs a running JACK
    /// server (its sockets in /dev/shm), `oss` the kernel's /dev/dsp. Opening them without it fails,
    /// and the JACK client library prints a screenful of errors first.
    public static func backendPresent(for name: String) -> Bool {
        switch name {
        case "jack":
            guard let dir = opendir("/dev/shm") else { return false }
            defer { closedir(dir) }
            while let entry = readdir(dir) {
                let found = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                    raw.starts(with: Array("jack".utf8))
                }
                if found { return true }
            }
            return false
        case "oss":
            return access("/dev/dsp", F_OK) == 0
        default:
            return true
        }
    }

    /// The devices `backend` reports.
    /// - Parameters:
    ///   - backend: the alsa-lib calls to use; ``ALSASystem`` for the real ones.
    ///   - all: also the names that are no device here: ``converterPlugins``, and `jack` and `oss`
    ///     without their server or device (``backendPresent(for:)``).
    /// - Throws: ``AudioError/Kind/deviceUnavailable`` with alsa-lib's code when the device names
    ///   cannot be read at all. A sound card that cannot be queried is left out instead.
    public static func scan(backend: any ALSABackend = ALSASystem(), all: Bool = false) throws -> [ALSADeviceInfo] {
        var hints: [ALSANameHint] = []
        let rc = backend.pcmNameHints(&hints)
        if rc < 0 {
            throw AudioError(.deviceUnavailable, subject: "ALSA",
                             message: "cannot list the PCM devices: snd_device_name_hint failed: \(backend.errorDescription(code: rc))",
                             code: rc)
        }
        var cards: [ALSASoundCard] = []
        if backend.soundCards(&cards) < 0 { cards = [] }

        var result: [ALSADeviceInfo] = []
        var seen = Set<String>()
        func add(_ info: ALSADeviceInfo) {
            guard !info.name.isEmpty, seen.insert(info.name).inserted else { return }
            result.append(info)
        }
        for hint in hints where all || (!converterPlugins.contains(hint.name) && backendPresent(for: hint.name)) {
            let ioid = hint.ioid?.lowercased()
            add(ALSADeviceInfo(name: hint.name, description: oneLine(hint.description),
                               playback: ioid == nil || ioid == "output",
                               capture: ioid == nil || ioid == "input"))
        }
        for card in cards {
            for pcm in card.devices where pcm.playback || pcm.capture {
                let label = pcm.name.isEmpty ? card.name : "\(card.name): \(pcm.name)"
                add(ALSADeviceInfo(name: "plughw:\(card.index),\(pcm.index)",
                                   description: "\(label) (hardware, with rate and format conversion)",
                                   playback: pcm.playback, capture: pcm.capture))
                add(ALSADeviceInfo(name: "hw:\(card.index),\(pcm.index)",
                                   description: "\(label) (hardware, no conversion)",
                                   playback: pcm.playback, capture: pcm.capture))
            }
        }
        if let index = result.firstIndex(where: { $0.name == "default" }), index > 0 {
            result.insert(result.remove(at: index), at: 0)
        }
        return result
    }

    /// Makes alsa-lib read its configuration again at the next open or listing.
    ///
    /// alsa-lib reads its configuration once per process; hooks in it run at that moment (for
    /// instance the one that routes `default` to PulseAudio only when a server is reachable). Call
    /// this after a sound server has started or stopped. Do not call it while another thread is
    /// opening a device.
    /// - Parameter backend: the alsa-lib calls to use; ``ALSASystem`` for the real ones.
    public static func reloadConfiguration(backend: any ALSABackend = ALSASystem()) {
        _ = backend.reloadConfiguration()
    }

    /// alsa-lib descriptions are often two lines ("card name\nwhat it is"): make them one.
    static func oneLine(_ text: String) -> String {
        text.split(whereSeparator: \.isNewline)
            .map { line -> Substring in
                let isBlank: (Character) -> Bool = { $0 == " " || $0 == "\t" }
                guard let first = line.firstIndex(where: { !isBlank($0) }),
                      let last = line.lastIndex(where: { !isBlank($0) }) else { return "" }
                return line[first...last]
            }
            .filter { !$0.isEmpty }
            .joined(separator: ", ")
    }
}
