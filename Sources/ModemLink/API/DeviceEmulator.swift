import ModemAudio
import Synchronization

/// The other end: a device that answers the handshake, the cancel and close signals, and replies to
/// each request. It echoes by default, or runs a handler. It runs on its own thread over any audio
/// output and input (a sound card, or an ``AudioPipe`` for tests in process).
///
/// ```swift
/// let phoneToDevice = AudioPipe(sampleRate: 48000), deviceToPhone = AudioPipe(sampleRate: 48000)
/// let device = try DeviceEmulator(configuration: config, sink: deviceToPhone.sink, source: phoneToDevice.source)
/// device.start()
/// let phone = AudioJackManager(configuration: config, openOutput: { phoneToDevice.sink },
///                              openInput: { deviceToPhone.source })
/// ```
public final class DeviceEmulator: Sendable {
    /// What the device answers to a request (master-slave). Runs on the emulator's thread.
    public typealias Handler = @Sendable ([UInt8]) -> [UInt8]

    /// The protocol parameters.
    public let configuration: LinkConfiguration
    /// Everything the device reports (requests, duplex messages, cancels, close), newest 1024 kept.
    public let events: AsyncStream<LinkEvent>
    private let continuation: AsyncStream<LinkEvent>.Continuation
    private let driver: LinkDriver<DeviceStateMachine>
    private let counts = EmulatorCounts()

    /// Creates an emulator (not started).
    /// - Parameters:
    ///   - configuration: must match the phone's.
    ///   - name: the name given in the handshake.
    ///   - sharedMedium: whether its output is heard on its input (one line for both ends).
    ///   - sink: where it plays.
    ///   - source: what it hears.
    ///   - handler: the reply to a request (default: the request itself).
    /// - Throws: ``SwiftModem/ModemSettingsError`` when the baud rate does not fit the sample rate.
    public init(configuration: LinkConfiguration, name: String = "SwiftModem device emulator", sharedMedium: Bool = false,
                sink: any AudioSink, source: any AudioSource, handler: @escaping Handler = { $0 }) throws {
        self.configuration = configuration
        (events, continuation) = AsyncStream.makeStream(of: LinkEvent.self, bufferingPolicy: .bufferingNewest(1024))
        var machine = DeviceStateMachine(configuration: configuration, name: name)
        machine.attach()
        let station = LinkStation(machine: machine, modem: try makeLinkModem(configuration: configuration, sampleRate: source.sampleRate))
        if sharedMedium { station.useSharedMedium(configuration, seed: UInt64.random(in: 1...UInt64.max)) }
        let cont = continuation
        let counts = self.counts
        let mode = configuration.mode
        // Weak capture is impossible before init ends; the driver calls back into the station it owns.
        let box = StationBox()
        driver = LinkDriver(station: station, sink: sink, source: source,
                            observe: { m in counts.value.withLock { $0.state = m.state } },
                            onEvent: { e in
            cont.yield(e)
            if case .received(let m, let data) = e, mode == .masterSlave {
                counts.value.withLock { $0.requests += 1 }
                let reply = handler(data)
                box.reply(reply, to: m)
            }
        }, onFailure: { code, message in cont.yield(.error(code, message)) })
        box.attach(driver)
    }

    /// Starts answering.
    public func start() { driver.start() }

    /// Stops and releases the audio.
    public func stop() {
        driver.stop()
        continuation.finish()
    }

    /// Whether it still runs (false after ``stop()`` or when the audio failed).
    public var isRunning: Bool { driver.isRunning }

    /// The device state.
    public var state: DeviceStateMachine.State { counts.value.withLock { $0.state } }
    /// Requests handled so far.
    public var requestsHandled: Int { counts.value.withLock { $0.requests } }

    /// Duplex: sends a message on the device's initiative; the outcome (sendOK or timeout) comes as an event.
    public func send(_ data: [UInt8], timeout: Double? = nil) {
        driver.perform { st, now in st.perform(st.machine.send(data, timeout: timeout, now: now).actions) }
    }
}

private final class EmulatorCounts: Sendable {
    let value = Mutex((requests: 0, state: DeviceStateMachine.State.notReady))
}

/// Lets the emulator's event callback reach the station through the driver (replies are queued on
/// the driver thread, which is the thread the callback runs on).
private final class StationBox: Sendable {
    private let driver = Mutex<LinkDriver<DeviceStateMachine>?>(nil)
    func attach(_ d: LinkDriver<DeviceStateMachine>) { driver.withLock { $0 = d } }
    func reply(_ data: [UInt8], to message: UInt16) {
        let d = driver.withLock { $0 }
        d?.perform { st, now in st.perform(st.machine.reply(data, to: message, now: now).actions) }
    }
}
