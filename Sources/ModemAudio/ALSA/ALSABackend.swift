/// Which way a PCM stream moves samples.
public enum ALSAStreamDirection: String, Sendable, CaseIterable {
    /// From the program to the device (`SND_PCM_STREAM_PLAYBACK`).
    case playback
    /// From the device to the program (`SND_PCM_STREAM_CAPTURE`).
    case capture
}

/// One entry of alsa-lib's device-name hints (`snd_device_name_hint`), as strings.
public struct ALSANameHint: Sendable, Equatable {
    /// The `NAME` hint: what to pass to `snd_pcm_open`.
    public var name: String
    /// The `DESC` hint, possibly several lines; empty when alsa-lib has none.
    public var description: String
    /// The `IOID` hint: `"Input"`, `"Output"`, or `nil` when the device does both.
    public var ioid: String?

    /// Creates a hint.
    public init(name: String, description: String, ioid: String?) {
        self.name = name
        self.description = description
        self.ioid = ioid
    }
}

/// A sound card and its PCM devices, as alsa-lib's control interface reports them.
public struct ALSASoundCard: Sendable, Equatable {
    /// One PCM device of a card (the `D` of `hw:C,D`).
    public struct PCMDevice: Sendable, Equatable {
        /// The device number on its card, counted from 0.
        public var index: Int
        /// The device's name (`snd_pcm_info_get_name`).
        public var name: String
        /// Whether the device has a playback stream.
        public var playback: Bool
        /// Whether the device has a capture stream.
        public var capture: Bool

        /// Creates a device description.
        public init(index: Int, name: String, playback: Bool, capture: Bool) {
            self.index = index
            self.name = name
            self.playback = playback
            self.capture = capture
        }
    }

    /// The card number (the `C` of `hw:C,D`).
    public var index: Int
    /// The card's name (`snd_ctl_card_info_get_name`).
    public var name: String
    /// The card's PCM devices.
    public var devices: [PCMDevice]

    /// Creates a card description.
    public init(index: Int, name: String, devices: [PCMDevice]) {
        self.index = index
        self.name = name
        self.devices = devices
    }
}

/// The alsa-lib calls behind ``ALSAPlayback``, ``ALSACapture`` and ``ALSADevices``: the seam where
/// tests put a fake device in place of a sound card.
///
/// Methods keep alsa-lib's conventions: they return `0` (or a count) on success and a negative
/// `errno`-style code on failure, exactly as the C function did, so the callers' recovery logic
/// sees what it would see on a real device. ``ALSASystem`` is the implementation that calls alsa-lib.
public protocol ALSABackend: Sendable {
    /// `snd_pcm_open`: opens `device` in the given direction and stores the stream in `stream`.
    /// - Parameters:
    ///   - stream: receives the open stream on success; left `nil` on failure.
    ///   - device: an ALSA PCM name such as `default`, `plughw:0,0` or `hw:1,0`.
    ///   - direction: playback or capture.
    ///   - nonBlocking: opens with `SND_PCM_NONBLOCK` (a busy device fails at once instead of waiting,
    ///     and transfers return `-EAGAIN` instead of blocking).
    /// - Returns: 0 or a negative error code.
    func openPCM(_ stream: inout (any ALSAPCMStream)?, device: String, direction: ALSAStreamDirection,
                 nonBlocking: Bool) -> Int32

    /// `snd_strerror`: alsa-lib's text for a (negative) error code.
    func errorDescription(code: Int32) -> String

    /// `snd_device_name_hint(-1, "pcm", ...)`, `snd_device_name_get_hint` and
    /// `snd_device_name_free_hint`: the PCM names alsa-lib's configuration advertises.
    /// - Returns: 0 or a negative error code.
    func pcmNameHints(_ hints: inout [ALSANameHint]) -> Int32

    /// `snd_card_next`, `snd_ctl_open`, `snd_ctl_card_info`, `snd_ctl_pcm_next_device` and
    /// `snd_ctl_pcm_info`: the sound cards present and their PCM devices. A card whose control
    /// device cannot be opened is left out.
    /// - Returns: 0 or a negative error code from `snd_card_next`.
    func soundCards(_ cards: inout [ALSASoundCard]) -> Int32

    /// `snd_config_update_free_global`: forgets alsa-lib's cached configuration so that the next
    /// open reads it again (and re-runs its hooks, such as "route `default` to PulseAudio when it
    /// runs").
    func reloadConfiguration() -> Int32
}
