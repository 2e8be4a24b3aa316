import Foundation
import ModemAudio
import ModemCodecs
import Synchronization

/// The phone side of the Communication API over audio (its `AudioJackManager`): a sound
/// card's output and input, or any ``AudioSink``/``AudioSource`` pair such as an ``AudioPipe``.
///
/// Async/await:
/// ```swift
/// let manager = AudioJackManager.alsa(device: "default")
/// do {
///     try await manager.open()
///     let reply = try await manager.exchange(Array("ping".utf8), timeout: .seconds(10))
/// } catch {
///     print(error, error.returnCode)   // a LinkError and the Communication API's integer for it
/// }
/// await manager.close()
/// ```
/// Events (progress, device messages in duplex mode, cancel outcomes) arrive on ``events``. The
/// callback-style facade (``openDevice()``, ``exchangeData(_:timeout:callback:)``,
/// ``cancelExchange()``, ``closeDevice()``, ``closeResource()``) has the Communication API's names and integer codes.
public final class AudioJackManager: CommunicationManager {
    /// The protocol parameters.
    public var configuration: LinkConfiguration { session.configuration }
    /// Events, newest 1024 kept when nobody reads them.
    public var events: AsyncStream<CommunicationEvent> { session.events }
    /// Always ``DeviceCommunicationChannel/audioJack``.
    public var channel: DeviceCommunicationChannel { .audioJack }

    private let session: PhoneSession<LinkDriver<PhoneStateMachine>>

    /// Creates a manager over an audio output and input, opened by ``open()``.
    /// - Parameters:
    ///   - configuration: mode, baud rate... (both ends must agree).
    ///   - sharedMedium: whether the output is heard on the input too (one line for both ends):
    ///     transmissions then wait for a quiet line and a random backoff.
    ///   - openOutput: opens the output (a failure makes ``open()`` throw ``LinkError/outputUnavailable(_:)``).
    ///   - openInput: opens the input (a failure makes ``open()`` throw ``LinkError/inputUnavailable(_:)``).
    public init(configuration: LinkConfiguration, sharedMedium: Bool = false,
                openOutput: @escaping @Sendable () throws -> any AudioSink,
                openInput: @escaping @Sendable () throws -> any AudioSource) {
        session = PhoneSession(configuration: configuration) { hooks throws(LinkError) in
            try Self.makeDriver(configuration: configuration, sharedMedium: sharedMedium,
                                openOutput: openOutput, openInput: openInput, hooks: hooks)
        }
    }

    /// A manager on an ALSA device (playback and capture on the same name), at 48 kHz.
    public static func alsa(device: String, configuration: LinkConfiguration = LinkConfiguration(latencySeconds: 0.3),
                            sampleRate: Int = 48000, sharedMedium: Bool = false) -> AudioJackManager {
        AudioJackManager(configuration: configuration, sharedMedium: sharedMedium,
                         openOutput: { try ALSAPlayback(device: device, sampleRate: sampleRate) },
                         openInput: { try ALSACapture(device: device, sampleRate: sampleRate) })
    }

    /// The library version (the Communication API's `getLibVersion`).
    public static var libraryVersion: String { "SwiftModem link protocol \(LinkFrame.version)" }

    public var state: PhoneStateMachine.State { session.state }

    /// The name the device gave at the last successful handshake.
    public var deviceName: String? { session.deviceName }

    /// Searches for devices (the Communication API's `searchDevices`): lists the ALSA devices that can both play
    /// and record (or takes `candidates`) and probes each with a handshake, releasing it afterwards
    /// without powering the device off. A device that answers is returned with its name.
    /// - Parameters:
    ///   - candidates: ALSA device names to probe (default: all that play and record).
    ///   - configuration: the protocol parameters to probe with.
    ///   - found: called with each device that answers, as soon as it does (`discoverOneDevice`).
    /// - Returns: the devices that answered (`discoverComplete`).
    public static func searchDevices(candidates: [String]? = nil,
                                     configuration: LinkConfiguration = LinkConfiguration(latencySeconds: 0.3),
                                     found: @Sendable (DeviceInfo) -> Void = { _ in }) async -> [DeviceInfo] {
        let names = candidates ?? ALSADevices.list().filter { $0.playback && $0.capture }.map(\.name)
        var answered: [DeviceInfo] = []
        for name in names {
            let manager = AudioJackManager.alsa(device: name, configuration: configuration)
            if (try? await manager.open()) != nil {
                let info = DeviceInfo(name: manager.deviceName, identifier: name, channel: .audioJack)
                answered.append(info)
                found(info)
                await manager.closeResources()
            }
        }
        return answered
    }

    // MARK: async/await

    public func open() async throws(LinkError) { try await session.open() }

    public func exchange(_ data: [UInt8], timeout: Duration) async throws(LinkError) -> [UInt8] {
        try await session.exchange(data, timeout: timeout)
    }

    public func cancel() async throws(LinkError) { try await session.cancel() }

    public func close() async { await session.close() }

    public func closeResources() async { await session.closeResources() }

    // MARK: Callback facade (the Communication API's names and integer codes)
    //
    // These block the calling thread until the call is taken (and, for open and close, until it
    // ended). Call them from an ordinary thread (a command-line tool's main thread, a `Thread`), not
    // from inside Swift concurrency's cooperative pool, where blocking can starve the tasks they wait on.

    /// Opens the device (blocking).
    /// - Returns: 0 (opened), -1 (the output could not be opened, or an open is under way), -2 (the
    ///   input could not be opened, or the audio failed), -3 (handshake failed), -4 (no device).
    @available(*, noasync, message: "blocks until done; from async code, await the async API instead")
    public func openDevice() -> Int32 {
        session.openDevice({ () throws(LinkError) in try await self.open() }) { error in
            if case .failed = error { return ReturnCode.notOpenedOrInput }
            return error.returnCode
        }
    }

    /// Starts an exchange; its outcome goes to `callback` (and to ``events``).
    /// - Parameters:
    ///   - data: the message.
    ///   - timeout: seconds the whole exchange may take.
    ///   - callback: receives `onSendOK`, `onReceive`, `onTimeout`, `onError`, `onProgress`.
    /// - Returns: 0 (started), -1 (an exchange is under way, or the timeout is not positive),
    ///   -2 (not opened), -3 (data too large), -4 (no device).
    @available(*, noasync, message: "blocks until done; from async code, await the async API instead")
    public func exchangeData(_ data: [UInt8], timeout: Double, callback: any CommunicationCallback) -> Int32 {
        session.exchangeData(data, timeout: timeout, callback: callback)
    }

    /// Cancels the exchange under way (non-blocking for the outcome, which comes as error 12 or 13).
    /// - Returns: 0, -1 (nothing to cancel), -2 (not opened), -3 (already cancelling), -4 (no device).
    @available(*, noasync, message: "blocks until done; from async code, await the async API instead")
    public func cancelExchange() -> Int32 { session.cancelExchange() }

    /// Sends the close signal up to 3 times and releases the audio resources (blocking).
    @available(*, noasync, message: "blocks until done; from async code, await the async API instead")
    public func closeDevice() { session.closeDevice() }

    /// Releases the audio resources without powering the device off (blocking).
    @available(*, noasync, message: "blocks until done; from async code, await the async API instead")
    public func closeResource() { session.closeResource() }

    // MARK: Internals

    /// Opens the output and input and builds a driver over them (not started).
    private static func makeDriver(configuration: LinkConfiguration, sharedMedium: Bool,
                                   openOutput: @Sendable () throws -> any AudioSink,
                                   openInput: @Sendable () throws -> any AudioSource,
                                   hooks: PhoneDriverHooks) throws(LinkError) -> LinkDriver<PhoneStateMachine> {
        let sink: any AudioSink, source: any AudioSource
        do { sink = try openOutput() } catch {
            hooks.onEvent(.error(.playbackWrite, "cannot open the output: \(error)"))
            throw .outputUnavailable("\(error)")
        }
        do { source = try openInput() } catch {
            try? sink.finish()
            hooks.onEvent(.error(.captureRead, "cannot open the input: \(error)"))
            throw .inputUnavailable("\(error)")
        }
        let station: LinkStation<PhoneStateMachine>
        do {
            station = LinkStation(machine: PhoneStateMachine(configuration: configuration),
                                  modem: try makeLinkModem(configuration: configuration, sampleRate: source.sampleRate))
        } catch {
            try? sink.finish()
            hooks.onEvent(.error(.playbackWrite, "\(error)"))
            throw .outputUnavailable("\(error)")
        }
        if sharedMedium { station.useSharedMedium(configuration, seed: UInt64.random(in: 1...UInt64.max)) }
        return LinkDriver(station: station, sink: sink, source: source,
                          observe: hooks.observe, onEvent: hooks.onEvent, onFailure: hooks.onFailure)
    }
}

extension LinkDriver: PhoneDriver where Machine == PhoneStateMachine {
    /// Runs `body` on the driver thread with the phone machine and carries out its actions.
    public func withMachine(_ body: @escaping @Sendable (inout PhoneStateMachine, Double) -> [LinkAction]) {
        perform { station, now in station.perform(body(&station.machine, now)) }
    }
}
