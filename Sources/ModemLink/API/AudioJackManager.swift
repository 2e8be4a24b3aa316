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
/// do {
///     try await manager.open()
///     let reply = try await manager.exchange(Array("ping".utf8), timeout: .seconds(10))
/// } catch {
///     print(error, error.returnCode)   // a LinkError and the seed's integer for it
/// }
/// await manager.close()
/// ```
/// Events (progress, device messages in duplex mode, cancel outcomes) arrive on ``events``. The
/// callback-style facade (``openDevice()``, ``exchangeData(_:timeout:callback:)``,
/// ``cancelExchange()``, ``closeDevice()``, ``closeResource()``) has the seed's names and integer codes.
public final class AudioJackManager: CommunicationManager {
    /// The protocol parameters.
    public let configuration: LinkConfiguration
    /// Events, newest 1024 kept when nobody reads them.
    public let events: AsyncStream<CommunicationEvent>
    /// Always ``DeviceCommunicationChannel/audioJack``.
    public var channel: DeviceCommunicationChannel { .audioJack }

    private let continuation: AsyncStream<CommunicationEvent>.Continuation
    private let openOutput: @Sendable () throws -> any AudioSink
    private let openInput: @Sendable () throws -> any AudioSource
    private let sharedMedium: Bool

    private typealias Driver = LinkDriver<PhoneStateMachine>

    /// Everything that changes, under one lock.
    private struct Shared {
        var driver: Driver?
        /// An open is under way (from its first check to its outcome): other opens are refused.
        var opening = false
        var state: PhoneStateMachine.State = .waitingDevice
        var openWaiter: CheckedContinuation<Result<Void, LinkError>, Never>?
        var exchangeWaiter: CheckedContinuation<Result<[UInt8], LinkError>, Never>?
        var exchangeBusy = false
        var callback: (any CommunicationCallback)?
        var closedWaiter: CheckedContinuation<Void, Never>?
        var noDevice = false
        var deviceName: String?

        /// What a call gets when no device is open: no device after a search that found none.
        var notOpened: LinkError { noDevice ? .noDevice : .notOpened }
    }
    private let shared = Mutex(Shared())

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

    public func open() async throws(LinkError) {
        // Claim the open and look at the driver under one lock: a second open meanwhile is refused,
        // so only one driver is ever created.
        let existing = try shared.withLock { s throws(LinkError) -> Driver? in
            if s.opening { throw .busy }
            s.opening = true
            return s.driver
        }
        defer { shared.withLock { $0.opening = false } }
        let driver: Driver
        if let existing {
            driver = existing
        } else {
            driver = try makeDriver()
            shared.withLock { $0.driver = driver }
            driver.start()
        }
        let outcome = await withCheckedContinuation { (c: CheckedContinuation<Result<Void, LinkError>, Never>) in
            let alive = shared.withLock { s -> Bool in
                guard s.driver === driver else { return false }
                s.openWaiter = c
                return true
            }
            guard alive else { return c.resume(returning: .failure(.failed(.captureRead, "the audio ended"))) }
            let session = UInt8.random(in: 1...255)
            driver.perform { st, now in st.perform(st.machine.open(session: session, now: now)) }
        }
        if case .failure(let error) = outcome {
            shared.withLock { $0.noDevice = error == .noDevice }
            await stopDriver()
            throw error
        }
    }

    public func exchange(_ data: [UInt8], timeout: Duration) async throws(LinkError) -> [UInt8] {
        let driver = try reserveExchange(callback: nil).get()
        return try await runExchange(on: driver, data, timeout: Self.seconds(timeout), started: { _ in }).get()
    }

    public func cancel() async throws(LinkError) {
        let driver = try shared.withLock { s throws(LinkError) -> Driver in
            guard let d = s.driver else { throw s.notOpened }
            return d
        }
        let code = await withCheckedContinuation { (c: CheckedContinuation<Int32, Never>) in
            driver.perform { st, now in
                let (code, actions) = st.machine.cancel(now: now)
                st.perform(actions)
                c.resume(returning: code)
            }
        }
        switch code {
        case ReturnCode.ok: return
        case ReturnCode.busyOrOutput: throw .nothingToCancel
        case ReturnCode.handshakeFailedOrCancelling: throw .alreadyCancelling
        case ReturnCode.noDevice: throw .noDevice
        default: throw .notOpened
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

    // MARK: Callback facade (the seed's names and integer codes)
    //
    // These block the calling thread until the call is taken (and, for open and close, until it
    // ended). Call them from an ordinary thread (a command-line tool's main thread, a `Thread`), not
    // from inside Swift concurrency's cooperative pool, where blocking can starve the tasks they wait on.

    /// Opens the device (blocking).
    /// - Returns: 0 (opened), -1 (the output could not be opened, or an open is under way), -2 (the
    ///   input could not be opened, or the audio failed), -3 (handshake failed), -4 (no device).
    public func openDevice() -> Int32 {
        blocking { () async -> Int32 in
            do throws(LinkError) {
                try await self.open()
                return ReturnCode.ok
            } catch .failed {
                return ReturnCode.notOpenedOrInput
            } catch {
                return error.returnCode
            }
        }
    }

    /// Starts an exchange; its outcome goes to `callback` (and to ``events``).
    /// - Parameters:
    ///   - data: the message.
    ///   - timeout: seconds the whole exchange may take.
    ///   - callback: receives `onSendOK`, `onReceive`, `onTimeout`, `onError`, `onProgress`.
    /// - Returns: 0 (started), -1 (an exchange is under way, or the timeout is not positive),
    ///   -2 (not opened), -3 (data too large), -4 (no device).
    public func exchangeData(_ data: [UInt8], timeout: Double, callback: any CommunicationCallback) -> Int32 {
        let driver: Driver
        switch reserveExchange(callback: callback) {
        case .success(let d): driver = d
        case .failure(let e): return e.returnCode
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
    /// - Returns: 0, -1 (nothing to cancel), -2 (not opened), -3 (already cancelling), -4 (no device).
    public func cancelExchange() -> Int32 {
        blocking { () async -> Int32 in
            do throws(LinkError) {
                try await self.cancel()
                return ReturnCode.ok
            } catch {
                return error.returnCode
            }
        }
    }

    /// Sends the close signal up to 3 times and releases the audio resources (blocking).
    public func closeDevice() { blocking { await self.close() } }

    /// Releases the audio resources without powering the device off (blocking).
    public func closeResource() { blocking { await self.closeResources() } }

    // MARK: Internals

    private static func seconds(_ d: Duration) -> Double {
        let c = d.components
        return Double(c.seconds) + Double(c.attoseconds) * 1e-18
    }

    /// Opens the output and input and builds a driver over them (not started).
    private func makeDriver() throws(LinkError) -> Driver {
        let sink: any AudioSink, source: any AudioSource
        do { sink = try openOutput() } catch {
            emit(.error(.playbackWrite, "cannot open the output: \(error)"))
            throw .outputUnavailable("\(error)")
        }
        do { source = try openInput() } catch {
            try? sink.finish()
            emit(.error(.captureRead, "cannot open the input: \(error)"))
            throw .inputUnavailable("\(error)")
        }
        let station: LinkStation<PhoneStateMachine>
        do {
            station = LinkStation(machine: PhoneStateMachine(configuration: configuration),
                                  modem: try LinkModem(configuration: configuration, sampleRate: source.sampleRate))
        } catch {
            try? sink.finish()
            emit(.error(.playbackWrite, "\(error)"))
            throw .outputUnavailable("\(error)")
        }
        if sharedMedium { station.useSharedMedium(configuration, seed: UInt64.random(in: 1...UInt64.max)) }
        return LinkDriver(station: station, sink: sink, source: source,
                          observe: { [weak self] m in self?.shared.withLock { $0.state = m.state } },
                          onEvent: { [weak self] e in self?.handle(e) },
                          onFailure: { [weak self] c, m in self?.transportFailed(c, m) })
    }

    /// Takes the one exchange slot (and the facade's callback) at once, on the caller's thread: the
    /// driver, or why not (not opened, no device, busy).
    private func reserveExchange(callback: (any CommunicationCallback)?) -> Result<Driver, LinkError> {
        shared.withLock { s in
            guard let d = s.driver else { return .failure(s.notOpened) }
            if s.exchangeBusy { return .failure(.busy) }
            s.exchangeBusy = true
            s.callback = callback
            return .success(d)
        }
    }

    /// Runs a reserved exchange: reports the machine's start code (0 or its refusal) through
    /// `started`, then awaits the outcome.
    private func runExchange(on driver: Driver, _ data: [UInt8], timeout: Double,
                             started: @escaping @Sendable (Int32) -> Void) async -> Result<[UInt8], LinkError> {
        guard timeout > 0, timeout.isFinite else {
            shared.withLock { $0.exchangeBusy = false; $0.callback = nil }
            started(LinkError.invalidTimeout.returnCode)
            return .failure(.invalidTimeout)
        }
        let maximum = configuration.maximumMessageSize
        return await withCheckedContinuation { (c: CheckedContinuation<Result<[UInt8], LinkError>, Never>) in
            shared.withLock { $0.exchangeWaiter = c }
            driver.perform { [weak self] st, now in
                let (code, actions) = st.machine.exchange(data, timeout: timeout, now: now)
                started(code)
                guard code == ReturnCode.ok else {
                    let refusal: LinkError
                    switch code {
                    case ReturnCode.busyOrOutput: refusal = .busy
                    case ReturnCode.handshakeFailedOrCancelling: refusal = .messageTooLarge(size: data.count, maximum: maximum)
                    case ReturnCode.noDevice: refusal = .noDevice
                    default: refusal = .notOpened
                    }
                    self?.finishExchange(.failure(refusal), notify: false)
                    return
                }
                st.perform(actions)
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
        guard let d = shared.withLock({ s -> Driver? in defer { s.driver = nil }; return s.driver }) else { return }
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            Thread { d.stop(); c.resume() }.start()
        }
        shared.withLock { $0.state = .waitingDevice }
    }

    private func emit(_ e: CommunicationEvent) {
        continuation.yield(e)
    }

    /// Ends the exchange under way: wakes its waiter and (unless it was refused) tells the facade's callback.
    private func finishExchange(_ r: Result<[UInt8], LinkError>, notify: Bool = true) {
        let (waiter, cb) = shared.withLock { s -> (CheckedContinuation<Result<[UInt8], LinkError>, Never>?, (any CommunicationCallback)?) in
            defer { s.exchangeWaiter = nil; s.exchangeBusy = false; s.callback = nil }
            return (s.exchangeWaiter, s.callback)
        }
        if notify, let cb {
            switch r {
            case .success(let d): if configuration.mode == .masterSlave { cb.onReceive(d) }
            case .failure(.timedOut): cb.onTimeout()
            case .failure(.cancelled): cb.onError(CommunicationError.cancelSucceeded.rawValue, message: CommunicationError.cancelSucceeded.description)
            case .failure(.failed(let e, let m)): cb.onError(e.rawValue, message: m)
            case .failure(let e): cb.onError(CommunicationError.exchangeState.rawValue, message: e.description)
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
            let w = shared.withLock { s -> CheckedContinuation<Result<Void, LinkError>, Never>? in
                defer { s.openWaiter = nil }
                if code == ReturnCode.ok { s.deviceName = name }
                return s.openWaiter
            }
            switch code {
            case ReturnCode.ok: w?.resume(returning: .success(()))
            case ReturnCode.noDevice: w?.resume(returning: .failure(.noDevice))
            default: w?.resume(returning: .failure(.handshakeFailed))
            }
        case .sendOK:
            cb?.onSendOK()
            if configuration.mode == .duplex { finishExchange(.success([])) }
        case .received(_, let data):
            if configuration.mode == .masterSlave { finishExchange(.success(data)) } else { cb?.onReceive(data) }
        case .timeout:
            finishExchange(.failure(.timedOut))
        case .error(let code, let message):
            switch code {
            case .cancelFailed: cb?.onError(code.rawValue, message: message)
            case .cancelSucceeded: finishExchange(.failure(.cancelled))
            default: finishExchange(.failure(.failed(code, message)))
            }
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
        finishExchange(.failure(.failed(code, message)))
        let (ow, cw) = shared.withLock { s in
            defer { s.openWaiter = nil; s.closedWaiter = nil; s.driver = nil; s.state = .waitingDevice }
            return (s.openWaiter, s.closedWaiter)
        }
        ow?.resume(returning: .failure(.failed(code, message)))
        cw?.resume()
    }
}
