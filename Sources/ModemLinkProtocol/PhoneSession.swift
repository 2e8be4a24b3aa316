import Foundation
import Synchronization
import ModemRuntime

/// The thread that runs a phone's state machine over one transport (audio, RFCOMM, ...), as a
/// ``PhoneSession`` needs it.
public protocol PhoneDriver: AnyObject, Sendable {
    /// Starts the driver's thread.
    func start()
    /// Runs `body` on the driver's thread with the machine and the driver's clock; the driver
    /// carries out the actions it returns.
    func withMachine(_ body: @escaping @Sendable (inout PhoneStateMachine, Double) -> [LinkAction])
    /// Stops the driver and waits until it has (the transport is then released).
    func stop()
}

/// What a ``PhoneDriver`` reports to its ``PhoneSession``, on the driver's thread.
public struct PhoneDriverHooks: Sendable {
    /// The machine after each step (to mirror its state).
    public let observe: @Sendable (PhoneStateMachine) -> Void
    /// An event of the machine.
    public let onEvent: @Sendable (LinkEvent) -> Void
    /// The transport failed with one of the Communication API's codes (9, 10, 20, ...); the driver is ending.
    public let onFailure: @Sendable (CommunicationError, String) -> Void
    /// The transport could not be brought up after all (a connection that failed after the driver
    /// started): ``PhoneSession/open()`` throws this error; the driver is ending.
    public let onOpenFailure: @Sendable (LinkError) -> Void
}

/// The phone side of the Communication API without the transport: the one-open/one-exchange/
/// one-cancel rules, the waiters of the async calls, the Communication API's callback facade and its integer
/// codes. ``CommunicationManager`` implementations (the audio-jack manager, the Bluetooth manager)
/// own one and supply the driver.
public final class PhoneSession<Driver: PhoneDriver>: Sendable {
    /// The protocol parameters.
    public let configuration: LinkConfiguration
    /// Events, newest 1024 kept when nobody reads them.
    public let events: AsyncStream<CommunicationEvent>
    private let continuation: AsyncStream<CommunicationEvent>.Continuation
    private let makeDriver: @Sendable (PhoneDriverHooks) throws(LinkError) -> Driver

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

    /// Creates a session.
    /// - Parameters:
    ///   - configuration: the protocol parameters.
    ///   - makeDriver: opens the transport and builds a driver (not started) reporting to the hooks;
    ///     throws the error ``open()`` should fail with when the transport cannot be opened.
    public init(configuration: LinkConfiguration, makeDriver: @escaping @Sendable (PhoneDriverHooks) throws(LinkError) -> Driver) {
        self.configuration = configuration
        self.makeDriver = makeDriver
        (events, continuation) = AsyncStream.makeStream(of: CommunicationEvent.self, bufferingPolicy: .bufferingNewest(1024))
    }

    /// The phone state.
    public var state: PhoneStateMachine.State { shared.withLock { $0.state } }
    /// The name the device gave at the last successful handshake.
    public var deviceName: String? { shared.withLock { $0.deviceName } }
    /// Whether a driver (a transport) is up.
    public var isOpen: Bool { shared.withLock { $0.driver != nil } }

    /// Reports an event to ``events`` (for transport-level news the machine does not see).
    public func emit(_ e: CommunicationEvent) {
        continuation.yield(e)
    }

    // MARK: async/await

    /// ``CommunicationManager/open()``.
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
            let hooks = PhoneDriverHooks(observe: { [weak self] m in self?.shared.withLock { $0.state = m.state } },
                                         onEvent: { [weak self] e in self?.handle(e) },
                                         onFailure: { [weak self] c, m in self?.transportFailed(c, m) },
                                         onOpenFailure: { [weak self] e in self?.openFailed(e) })
            driver = try makeDriver(hooks)
            shared.withLock { $0.driver = driver }
            driver.start()
        }
        let outcome = await withCheckedContinuation { (c: CheckedContinuation<Result<Void, LinkError>, Never>) in
            let alive = shared.withLock { s -> Bool in
                guard s.driver === driver else { return false }
                s.openWaiter = c
                return true
            }
            guard alive else { return c.resume(returning: .failure(.failed(.unknown, "the transport ended"))) }
            let session = UInt8.random(in: 1...255)
            driver.withMachine { m, now in m.open(session: session, now: now) }
        }
        if case .failure(let error) = outcome {
            shared.withLock { $0.noDevice = error == .noDevice }
            await stopDriver()
            throw error
        }
    }

    /// ``CommunicationManager/exchange(_:timeout:)``.
    public func exchange(_ data: [UInt8], timeout: Duration) async throws(LinkError) -> [UInt8] {
        let driver = try reserveExchange(callback: nil).get()
        return try await runExchange(on: driver, data, timeout: Self.seconds(timeout), started: { _ in }).get()
    }

    /// ``CommunicationManager/cancel()``.
    public func cancel() async throws(LinkError) {
        let driver = try shared.withLock { s throws(LinkError) -> Driver in
            guard let d = s.driver else { throw s.notOpened }
            return d
        }
        let code = await withCheckedContinuation { (c: CheckedContinuation<Int32, Never>) in
            driver.withMachine { m, now in
                let (code, actions) = m.cancel(now: now)
                c.resume(returning: code)
                return actions
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

    /// ``CommunicationManager/close()``.
    public func close() async {
        guard let driver = shared.withLock({ $0.driver }) else { return }
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            shared.withLock { $0.closedWaiter = c }
            driver.withMachine { m, now in m.close(now: now) }
        }
        await stopDriver()
    }

    /// ``CommunicationManager/closeResources()``.
    public func closeResources() async {
        guard let driver = shared.withLock({ $0.driver }) else { return }
        driver.withMachine { m, _ in m.closeResources() }
        await stopDriver()
    }

    // MARK: Callback facade (the Communication API's names and integer codes)

    /// The Communication API's `openDevice`, blocking: 0, or `open`'s failure as the channel's integer.
    /// - Parameters:
    ///   - open: the open to run (``open()``, or a manager's open with an identifier).
    ///   - code: the channel's return code for a failure.
    @available(*, noasync, message: "blocks until done; from async code, await the async API instead")
    public func openDevice(_ open: @escaping @Sendable () async throws(LinkError) -> Void,
                           code: @escaping @Sendable (LinkError) -> Int32) -> Int32 {
        blocking { () async -> Int32 in
            do throws(LinkError) {
                try await open()
                return ReturnCode.ok
            } catch {
                return code(error)
            }
        }
    }

    /// The Communication API's `exchangeData`: starts an exchange whose outcome goes to `callback`.
    /// - Returns: 0 (started), -1 (busy, or the timeout is not positive), -2 (not opened), -3 (too large), -4 (no device).
    @available(*, noasync, message: "blocks until done; from async code, await the async API instead")
    public func exchangeData(_ data: [UInt8], timeout: Double, callback: any CommunicationCallback) -> Int32 {
        let driver: Driver
        switch reserveExchange(callback: callback) {
        case .success(let d): driver = d
        case .failure(let e): return e.returnCode
        }
        let started = BlockingHandoff<Int32>()
        Task {
            _ = await self.runExchange(on: driver, data, timeout: timeout) { code in started.put(code) }
        }
        return started.take()
    }

    /// The Communication API's `cancelExchange`: 0, -1 (nothing to cancel), -2 (not opened), -3 (already cancelling), -4 (no device).
    @available(*, noasync, message: "blocks until done; from async code, await the async API instead")
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

    /// The Communication API's `closeDevice` (blocking).
    @available(*, noasync, message: "blocks until done; from async code, await the async API instead")
    public func closeDevice() { blocking { await self.close() } }

    /// The Communication API's `closeResource` (blocking).
    @available(*, noasync, message: "blocks until done; from async code, await the async API instead")
    public func closeResource() { blocking { await self.closeResources() } }

    // MARK: Internals

    private static func seconds(_ d: Duration) -> Double {
        let c = d.components
        return Double(c.seconds) + Double(c.attoseconds) * 1e-18
    }

    /// Takes the one exchange slot (and the facade's callback) at once, on the caller's thread.
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
            driver.withMachine { [weak self] m, now in
                let (code, actions) = m.exchange(data, timeout: timeout, now: now)
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
                    return []
                }
                return actions
            }
        }
    }

    /// Blocks the calling thread (the facade's caller's, never the cooperative pool's) until `body` returns.
    @available(*, noasync)
    private func blocking<T: Sendable>(_ body: @escaping @Sendable () async -> T) -> T {
        BlockingHandoff.run(body)
    }

    private func stopDriver() async {
        guard let d = shared.withLock({ s -> Driver? in defer { s.driver = nil }; return s.driver }) else { return }
        // The driver's stop joins its thread: a blocking call, off the cooperative pool.
        await BlockingCalls.run { d.stop() }
        shared.withLock { $0.state = .waitingDevice }
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

    /// Driver thread: the transport never came up; the driver is ending.
    private func openFailed(_ error: LinkError) {
        let w = shared.withLock { s in
            defer { s.openWaiter = nil; s.driver = nil; s.state = .waitingDevice }
            return s.openWaiter
        }
        w?.resume(returning: .failure(error))
    }

    /// Driver thread: the transport failed; the driver is ending.
    /// The state is WAITING DEVICE before the error is told, so a caller that reads the state on
    /// the event sees it.
    private func transportFailed(_ code: CommunicationError, _ message: String) {
        let (ow, cw) = shared.withLock { s in
            defer { s.openWaiter = nil; s.closedWaiter = nil; s.driver = nil; s.state = .waitingDevice }
            return (s.openWaiter, s.closedWaiter)
        }
        emit(.error(code, message))
        finishExchange(.failure(.failed(code, message)))
        ow?.resume(returning: .failure(.failed(code, message)))
        cw?.resume()
    }
}
