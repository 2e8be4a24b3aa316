import Foundation
import ModemAudio
import ModemCodecs
import Synchronization

/// The phone side of the Communication API over audio (the seed's `AudioJackManager`): a sound
/// card's output and input, or any ``AudioSink``/``AudioSource`` pair such as an ``AudioPipe``.
///
/// Async/await:
/// ```swift
/// let manager = AudioJackManager.alsa(device: "default")
/// guard await manager.open() == 0 else { ... }
/// let reply = try await manager.exchange(Array("ping".utf8), timeout: 10)
/// await manager.close()
/// ```
/// Events (progress, device messages in duplex mode, cancel outcomes) arrive on ``events``. The
/// callback-style facade (``openDevice()``, ``exchangeData(_:timeout:callback:)``,
/// ``cancelExchange()``, ``closeDevice()``, ``closeResource()``) has the seed's names and codes.
public final class AudioJackManager: CommunicationManager, @unchecked Sendable {
    /// The protocol parameters.
    public let configuration: LinkConfiguration
    /// Events, newest 1024 kept when nobody reads them.
    public let events: AsyncStream<CommunicationEvent>

    private let continuation: AsyncStream<CommunicationEvent>.Continuation
    private let openOutput: @Sendable () throws -> any AudioSink
    private let openInput: @Sendable () throws -> any AudioSource
    private let sharedMedium: Bool

    private struct Shared {
        var driver: LinkDriver<PhoneStateMachine>?
        var state: PhoneStateMachine.State = .waitingDevice
        var openWaiter: CheckedContinuation<Int32, Never>?
        var exchangeWaiter: CheckedContinuation<Result<[UInt8], ExchangeFailure>, Never>?
        var exchangeBusy = false
        var callback: (any CommunicationCallback)?
        var closedWaiter: CheckedContinuation<Void, Never>?
        var noDevice = false
        var deviceName: String?

        /// What a call gets when no device is open: -4 after a search that found none, else -2.
        var notOpenedCode: Int32 { noDevice ? ReturnCode.noDevice : ReturnCode.notOpenedOrInput }
    }
    private let shared = Mutex(Shared())

    /// Creates a manager over an audio output and input, opened by ``open()``.
    /// - Parameters:
    ///   - configuration: mode, baud rate... (both ends must agree).
    ///   - sharedMedium: whether the output is heard on the input too (one line for both ends):
    ///     transmissions then wait for a quiet line and a random backoff.
    ///   - openOutput: opens the output (a failure makes ``open()`` return -1).
    ///   - openInput: opens the input (a failure makes ``open()`` return -2).
    public init(configuration: LinkConfiguration, sharedMedium: Bool = false,
                openOutput: @escaping @Sendable () throws -> any AudioSink,
                openInput: @escaping @Sendable () throws -> any AudioSource) {
        self.configuration = configuration
        self.sharedMedium = sharedMedium
        self.openOutput = openOutput
        self.openInput = openInput
        (events, continuation) = AsyncStream.makeStream(of: CommunicationEvent.self, bufferingPolicy: .bufferingNewest(1024))
    }

    /// A manager on an ALSA device (playback and capture on the same name), at 48 kHz.
    public static func alsa(device: String, configuration: LinkConfiguration = LinkConfiguration(latencySeconds: 0.3),
                            sampleRate: Int = 48000, sharedMedium: Bool = false) -> AudioJackManager {
        AudioJackManager(configuration: configuration, sharedMedium: sharedMedium,
                         openOutput: { try ALSAPlayback(device: device, sampleRate: sampleRate) },
                         openInput: { try ALSACapture(device: device, sampleRate: sampleRate) })
    }

    /// The library version (the seed's `getLibVersion`).
    public static var libraryVersion: String { "SwiftModem link protocol \(LinkFrame.version)" }

    public var state: PhoneStateMachine.State { shared.withLock { $0.state } }

    /// The name the device gave at the last successful handshake.
    public var deviceName: String? { shared.withLock { $0.deviceName } }

    /// Searches for devices (the seed's `searchDevices`): lists the ALSA devices that can both play
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
            if await manager.open() == ReturnCode.ok {
                let info = DeviceInfo(name: manager.deviceName, identifier: name, channel: .audioJack)
                answered.append(info)
                found(info)
                await manager.closeResources()
            }
        }
        return answered
    }

    // MARK: async/await

    public func open() async -> Int32 {
        if shared.withLock({ $0.openWaiter != nil }) { return ReturnCode.busyOrOutput }
        var driver = shared.withLock { $0.driver }
        if driver == nil {
            let sink: any AudioSink, source: any AudioSource
            do { sink = try openOutput() } catch { emit(.error(.playbackWrite, "cannot open the output: \(error)")); return ReturnCode.busyOrOutput }
            do { source = try openInput() } catch {
                try? sink.finish()
                emit(.error(.captureRead, "cannot open the input: \(error)"))
                return ReturnCode.notOpenedOrInput
            }
            let station: LinkStation<PhoneStateMachine>
            do {
                station = LinkStation(machine: PhoneStateMachine(configuration: configuration),
                                      modem: try LinkModem(configuration: configuration, sampleRate: source.sampleRate))
            } catch {
                try? sink.finish()
                emit(.error(.playbackWrite, "\(error)"))
                return ReturnCode.busyOrOutput
            }
            if sharedMedium { station.useSharedMedium(configuration, seed: UInt64.random(in: 1...UInt64.max)) }
            let d = LinkDriver(station: station, sink: sink, source: source,
                               onEvent: { [weak self] e in self?.handle(e) },
                               onFailure: { [weak self] c, m in self?.transportFailed(c, m) })
            d.observe = { [weak self] m in self?.shared.withLock { $0.state = m.state } }
            shared.withLock { $0.driver = d }
            d.start()
            driver = d
        }
        let code = await withCheckedContinuation { (c: CheckedContinuation<Int32, Never>) in
            shared.withLock { $0.openWaiter = c }
            let session = UInt8.random(in: 1...255)
            driver!.perform { st, now in st.perform(st.machine.open(session: session, now: now)) }
        }
        if code != ReturnCode.ok {
            shared.withLock { $0.noDevice = code == ReturnCode.noDevice }
            await stopDriver()
        }
        return code
    }

    public func exchange(_ data: [UInt8], timeout: Double) async throws(ExchangeFailure) -> [UInt8] {
        let driver = try reserveExchange(callback: nil).get()
        return try await runExchange(on: driver, data, timeout: timeout, started: { _ in }).get()
    }

    public func cancel() async -> Int32 {
        let (open, refusal) = shared.withLock { ($0.driver, $0.notOpenedCode) }
        guard let driver = open else { return refusal }
        return await withCheckedContinuation { (c: CheckedContinuation<Int32, Never>) in
            driver.perform { st, now in
                let (code, actions) = st.machine.cancel(now: now)
                st.perform(actions)
                c.resume(returning: code)
            }
        }
    }

    public func close() async {
        guard let driver = shared.withLock({ $0.driver }) else { return }
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            shared.withLock { $0.closedWaiter = c }
            driver.perform { st, now in st.perform(st.machine.close(now: now)) }
        }
        await stopDriver()
    }

    public func closeResources() async {
        guard let driver = shared.withLock({ $0.driver }) else { return }
        driver.perform { st, _ in st.perform(st.machine.closeResources()) }
        await stopDriver()
    }

    // MARK: Callback facade (the seed's names)
    //
    // These block the calling thread until the call is taken (and, for open and close, until it
    // ended). Call them from an ordinary thread (a command-line tool's main thread, a `Thread`), not
    // from inside Swift concurrency's cooperative pool, where blocking can starve the tasks they wait on.

    /// Opens the device (blocking): 0, -1, -2, -3 or -4 as ``open()``.
    public func openDevice() -> Int32 { blocking { await self.open() } }

    /// Starts an exchange; its outcome goes to `callback` (and to ``events``).
    /// - Returns: 0 (started), -1 (an exchange is under way), -2 (not opened), -3 (data too large),
    ///   -4 (no device).
    public func exchangeData(_ data: [UInt8], timeout: Double, callback: any CommunicationCallback) -> Int32 {
        let driver: LinkDriver<PhoneStateMachine>
        switch reserveExchange(callback: callback) {
        case .success(let d): driver = d
        case .failure(.refused(let code)): return code
        case .failure: return ReturnCode.notOpenedOrInput
        }
        let codeBox = Mutex<Int32?>(nil)
        let sem = DispatchSemaphore(value: 0)
        Task {
            _ = await self.runExchange(on: driver, data, timeout: timeout) { code in
                codeBox.withLock { $0 = code }
                sem.signal()
            }
        }
        sem.wait()
        return codeBox.withLock { $0 } ?? ReturnCode.notOpenedOrInput
    }

    /// Cancels the exchange under way (non-blocking for the outcome, which comes as error 12 or 13).
    public func cancelExchange() -> Int32 { blocking { await self.cancel() } }

    /// Sends the close signal up to 3 times and releases the audio resources (blocking).
    public func closeDevice() { blocking { await self.close() } }

    /// Releases the audio resources without powering the device off (blocking).
    public func closeResource() { blocking { await self.closeResources() } }

    // MARK: Internals

    /// Takes the one exchange slot (and the facade's callback) at once, on the caller's thread: the
    /// driver, or the refusal code (-2/-4 not opened, -1 busy).
    private func reserveExchange(callback: (any CommunicationCallback)?) -> Result<LinkDriver<PhoneStateMachine>, ExchangeFailure> {
        shared.withLock { s in
            guard let d = s.driver else { return .failure(.refused(s.notOpenedCode)) }
            if s.exchangeBusy { return .failure(.refused(ReturnCode.busyOrOutput)) }
            s.exchangeBusy = true
            s.callback = callback
            return .success(d)
        }
    }

    /// Runs a reserved exchange: reports the machine's start code (0 or its refusal) through
    /// `started`, then awaits the outcome.
    private func runExchange(on driver: LinkDriver<PhoneStateMachine>, _ data: [UInt8], timeout: Double,
                             started: @escaping @Sendable (Int32) -> Void) async -> Result<[UInt8], ExchangeFailure> {
        guard timeout > 0, timeout.isFinite else {
            shared.withLock { $0.exchangeBusy = false; $0.callback = nil }
            started(ReturnCode.busyOrOutput)
            return .failure(.error(.exchangeState, "the timeout must be a positive number of seconds"))
        }
        return await withCheckedContinuation { (c: CheckedContinuation<Result<[UInt8], ExchangeFailure>, Never>) in
            shared.withLock { $0.exchangeWaiter = c }
            driver.perform { [weak self] st, now in
                let (code, actions) = st.machine.exchange(data, timeout: timeout, now: now)
                started(code)
                if code != ReturnCode.ok { self?.finishExchange(.failure(.refused(code)), notify: false) } else { st.perform(actions) }
            }
        }
    }

    private func blocking<T: Sendable>(_ body: @escaping @Sendable () async -> T) -> T {
        let box = Mutex<T?>(nil)
        let sem = DispatchSemaphore(value: 0)
        Task { let v = await body(); box.withLock { $0 = v }; sem.signal() }
        sem.wait()
        return box.withLock { $0 }!
    }

    private func stopDriver() async {
        guard let d = shared.withLock({ s -> LinkDriver<PhoneStateMachine>? in defer { s.driver = nil }; return s.driver }) else { return }
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            Thread { d.stop(); c.resume() }.start()
        }
        shared.withLock { $0.state = .waitingDevice }
    }

    private func emit(_ e: CommunicationEvent) {
        continuation.yield(e)
    }

    private func finishExchange(_ r: Result<[UInt8], ExchangeFailure>, notify: Bool = true) {
        let (waiter, cb) = shared.withLock { s -> (CheckedContinuation<Result<[UInt8], ExchangeFailure>, Never>?, (any CommunicationCallback)?) in
            defer { s.exchangeWaiter = nil; s.exchangeBusy = false; s.callback = nil }
            return (s.exchangeWaiter, s.callback)
        }
        if notify, let cb {
            switch r {
            case .success(let d): if configuration.mode == .masterSlave { cb.onReceive(d) }
            case .failure(.timeout): cb.onTimeout()
            case .failure(.error(let e, let m)): cb.onError(e.rawValue, message: m)
            case .failure(.refused): break
            }
        }
        waiter?.resume(returning: r)
    }

    /// Driver thread: an event from the phone machine.
    private func handle(_ e: LinkEvent) {
        emit(e)
        let cb = shared.withLock { $0.callback }
        switch e {
        case .opened(let code, let name):
            if code == ReturnCode.ok { shared.withLock { $0.deviceName = name } }
            let w = shared.withLock { s -> CheckedContinuation<Int32, Never>? in defer { s.openWaiter = nil }; return s.openWaiter }
            w?.resume(returning: code)
        case .sendOK:
            cb?.onSendOK()
            if configuration.mode == .duplex { finishExchange(.success([])) }
        case .received(_, let data):
            if configuration.mode == .masterSlave { finishExchange(.success(data)) } else { cb?.onReceive(data) }
        case .timeout:
            finishExchange(.failure(.timeout))
        case .error(let code, let message):
            if code == .cancelFailed { cb?.onError(code.rawValue, message: message) } else { finishExchange(.failure(.error(code, message))) }
        case .progress(let b, let t):
            cb?.onProgress(bytes: b, total: t)
        case .closed:
            let w = shared.withLock { s -> CheckedContinuation<Void, Never>? in defer { s.closedWaiter = nil }; return s.closedWaiter }
            w?.resume()
        case .cancelled:
            break
        }
    }

    /// Driver thread: the audio failed; the driver is ending.
    private func transportFailed(_ code: CommunicationError, _ message: String) {
        emit(.error(code, message))
        finishExchange(.failure(.error(code, message)))
        let (ow, cw) = shared.withLock { s in
            defer { s.openWaiter = nil; s.closedWaiter = nil; s.driver = nil; s.state = .waitingDevice }
            return (s.openWaiter, s.closedWaiter)
        }
        ow?.resume(returning: ReturnCode.notOpenedOrInput)
        cw?.resume()
    }
}
