import ModemAudio
import ModemTransport
import Synchronization

/// The device end of link transports over audio (a sound card, or an ``AudioPipe`` in tests): a
/// device state machine on its own thread, like ``DeviceEmulator``, whose connections are
/// ``LinkTransport``s. Each session the phone opens is one connection, handed out by ``accept()``;
/// the transport's `send` returns the link's message number (``LinkTransport/sendMessage(_:)``) and
/// its inputs are lossless, with back-pressure on the link when the reader stops reading.
///
/// ```swift
/// let device = try LinkDevice.alsa(device: "default")
/// device.start()
/// let transport = try await device.accept()      // a phone opened the link
/// ```
public final class LinkDevice: Sendable {
    /// The protocol parameters (duplex).
    public let configuration: LinkConfiguration
    private let host: DeviceLinkHost
    private let driver: LinkDriver<DeviceStateMachine>

    /// Creates a device end (not started).
    /// - Parameters:
    ///   - configuration: must be duplex and match the phone's.
    ///   - name: the name given in the handshake.
    ///   - sharedMedium: whether its output is heard on its input (both ends on one line).
    ///   - options: the transports' timers.
    ///   - sink: where it plays.
    ///   - source: what it hears.
    /// - Throws: ``ModemSettingsError`` when the baud rate does not fit the sample rate.
    public init(configuration: LinkConfiguration, name: String = "SwiftModem messaging", sharedMedium: Bool = false,
                options: LinkTransportOptions = LinkTransportOptions(), sink: any AudioSink, source: any AudioSource) throws {
        self.configuration = configuration
        let host = DeviceLinkHost(configuration: configuration, options: options.allowingSharedMedium(sharedMedium, configuration))
        self.host = host
        var machine = DeviceStateMachine(configuration: configuration, name: name)
        machine.attach()
        let station = LinkStation(machine: machine, modem: try makeLinkModem(configuration: configuration, sampleRate: source.sampleRate))
        if sharedMedium { station.useSharedMedium(configuration, seed: UInt64.random(in: 1...UInt64.max)) }
        let clock = Atomic<UInt64>(0)
        driver = LinkDriver(station: station, sink: sink, source: source,
                            observe: { m in host.note(session: m.session) },
                            onEvent: { e in host.handle(e, now: Double(bitPattern: clock.load(ordering: .relaxed))) },
                            onFailure: { code, message in host.stop(.localFailure("audio error \(code.rawValue): \(message)")) },
                            step: { st, now in
                                clock.store(now.bitPattern, ordering: .relaxed)
                                st.perform(host.service(&st.machine, now: now))
                            })
    }

    /// A device end on an ALSA device (playback and capture on the same name).
    /// - Throws: ``ModemAudio/AudioError`` when the device cannot be opened.
    public static func alsa(device: String, configuration: LinkConfiguration = LinkConfiguration(mode: .duplex, latencySeconds: 0.3),
                            sampleRate: Int = 48000, sharedMedium: Bool = false,
                            options: LinkTransportOptions = LinkTransportOptions()) throws -> LinkDevice {
        let source = try ALSACapture(device: device, sampleRate: sampleRate)
        let sink: ALSAPlayback
        do { sink = try ALSAPlayback(device: device, sampleRate: sampleRate) } catch { source.close(); throw error }
        return try LinkDevice(configuration: configuration, sharedMedium: sharedMedium, options: options, sink: sink, source: source)
    }

    /// Starts listening.
    public func start() { driver.start() }

    /// Stops and releases the audio; the connection and a waiting ``accept()`` end.
    public func stop() {
        driver.stop()
        host.stop(.localClose)
    }

    /// The next connection (a phone opened a session).
    /// - Throws: ``ModemTransport/TransportError`` when the device stopped or the audio failed.
    public func accept() async throws(TransportError) -> LinkTransport {
        try await host.accept()
    }
}

/// The phone end of link transports over audio: a phone state machine on its own thread;
/// ``dial()`` runs the channel protocol's handshake and returns the connection's ``LinkTransport``.
/// (``AudioJackManager`` is the Communication API over the same machine; this end is for messaging.)
public final class LinkPhone: Sendable {
    /// The protocol parameters (duplex).
    public let configuration: LinkConfiguration
    private let host: PhoneLinkHost
    private let driver: LinkDriver<PhoneStateMachine>

    /// Creates a phone end (not started).
    /// - Parameters:
    ///   - configuration: must be duplex and match the device's.
    ///   - sharedMedium: whether its output is heard on its input (both ends on one line).
    ///   - options: the transports' timers.
    ///   - sink: where it plays.
    ///   - source: what it hears.
    /// - Throws: ``ModemSettingsError`` when the baud rate does not fit the sample rate.
    public init(configuration: LinkConfiguration, sharedMedium: Bool = false, options: LinkTransportOptions = LinkTransportOptions(),
                sink: any AudioSink, source: any AudioSource) throws {
        self.configuration = configuration
        let host = PhoneLinkHost(configuration: configuration, options: options.allowingSharedMedium(sharedMedium, configuration))
        self.host = host
        let station = LinkStation(machine: PhoneStateMachine(configuration: configuration, name: "SwiftModem messaging"),
                                  modem: try makeLinkModem(configuration: configuration, sampleRate: source.sampleRate))
        if sharedMedium { station.useSharedMedium(configuration, seed: UInt64.random(in: 1...UInt64.max)) }
        let clock = Atomic<UInt64>(0)
        let driver = LinkDriver(station: station, sink: sink, source: source,
                                onEvent: { e in host.handle(e, now: Double(bitPattern: clock.load(ordering: .relaxed))) },
                                onFailure: { code, message in host.stop(.localFailure("audio error \(code.rawValue): \(message)")) },
                                step: { st, now in
                                    clock.store(now.bitPattern, ordering: .relaxed)
                                    st.perform(host.service(&st.machine, now: now))
                                })
        self.driver = driver
        host.scheduler.bind { body in driver.perform { st, now in st.perform(body(&st.machine, now)) } }
    }

    /// A phone end on an ALSA device (playback and capture on the same name).
    /// - Throws: ``ModemAudio/AudioError`` when the device cannot be opened.
    public static func alsa(device: String, configuration: LinkConfiguration = LinkConfiguration(mode: .duplex, latencySeconds: 0.3),
                            sampleRate: Int = 48000, sharedMedium: Bool = false,
                            options: LinkTransportOptions = LinkTransportOptions()) throws -> LinkPhone {
        let source = try ALSACapture(device: device, sampleRate: sampleRate)
        let sink: ALSAPlayback
        do { sink = try ALSAPlayback(device: device, sampleRate: sampleRate) } catch { source.close(); throw error }
        return try LinkPhone(configuration: configuration, sharedMedium: sharedMedium, options: options, sink: sink, source: source)
    }

    /// Starts the audio.
    public func start() { driver.start() }

    /// Stops and releases the audio; the connection ends.
    public func stop() {
        driver.stop()
        host.stop(.localClose)
    }

    /// Opens the link (the handshake, up to ``LinkConfiguration/handshakeAttempts`` hellos).
    /// - Throws: ``ModemTransport/TransportError`` when no device answered or the audio failed.
    public func dial() async throws(TransportError) -> LinkTransport {
        try await host.dial(session: UInt8.random(in: 1...255))
    }
}

extension LinkTransportOptions {
    /// On a shared line a station does not transmit while the other end's burst is on the air, so
    /// nothing (not even a heartbeat) is heard for a whole window of fragments: the silence timeout
    /// is at least one and a half windows' air time plus an acknowledgement timeout.
    func allowingSharedMedium(_ shared: Bool, _ configuration: LinkConfiguration) -> LinkTransportOptions {
        guard shared else { return self }
        var o = self
        let window = Double(configuration.windowFrames) * configuration.airtime(payload: configuration.framePayload)
        o.silenceTimeout = max(silenceTimeout, 1.5 * window + configuration.acknowledgementTimeout)
        return o
    }
}
