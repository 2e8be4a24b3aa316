import Foundation
import ModemDSP
import ModemRuntime
import ModemTransport
import Synchronization

/// Both ends of a link transport over the in-memory ``LoopbackMedium`` (two one-way lines with
/// noise and frame loss), in channel time: a discrete-event ``ModemRuntime/Simulation`` in which the
/// medium steps in 10 ms blocks and the applications above run as its tasks.
///
/// ``run(_:)`` runs the applications' code: channel time advances only when every task in it is
/// idle (waiting for the link, for the channel clock or for each other), straight to the next 10 ms
/// block or timer. So the time an application computes is no channel time, and a run is a function
/// of its seed: the same figures on any machine, under any load. Inside, ``dial()`` opens the phone
/// end, ``accept()`` gives the device end of each connection, and ``clock`` is the channel clock to
/// give the applications' own timers (e.g. a session's `TimerClock`).
///
/// ``mute(seconds:after:)`` cuts both lines for a while of channel time (a cut cable).
public final class LinkLoopbackPair: Sendable {
    /// The protocol parameters (duplex).
    public let configuration: LinkConfiguration
    /// The transports' timers.
    public let options: LinkTransportOptions
    /// The simulation the medium and the applications run in.
    public let simulation = Simulation()

    private let phoneHost: PhoneLinkHost
    private let deviceHost: DeviceLinkHost
    private let runner: Runner
    private let sessionSeed = Mutex(SplitMix64(seed: 1))

    /// Creates the pair (not started).
    /// - Parameters:
    ///   - configuration: the protocol parameters; must be duplex.
    ///   - impairments: noise, loss, drift and their seed.
    ///   - options: the transports' timers (keepalive, silence).
    /// - Throws: ``ModemSettingsError`` when the baud rate does not fit 48 kHz.
    public init(configuration: LinkConfiguration, impairments: LinkImpairments = LinkImpairments(),
                options: LinkTransportOptions = LinkTransportOptions()) throws {
        precondition(configuration.mode == .duplex, "LinkLoopbackPair runs the channel protocol in duplex mode")
        self.configuration = configuration
        self.options = options
        phoneHost = PhoneLinkHost(configuration: configuration, options: options)
        deviceHost = DeviceLinkHost(configuration: configuration, options: options)
        sessionSeed.withLock { $0 = SplitMix64(seed: impairments.seed ^ 0x5E55_1011) }
        let medium = LoopbackMedium(impairments: impairments,
                                    signalAmplitude: linkSignalAmplitude(configuration))
        var dm = DeviceStateMachine(configuration: configuration, name: "SwiftModem link transport")
        dm.attach()
        runner = Runner(medium: medium,
                        phone: LinkStation(machine: PhoneStateMachine(configuration: configuration, name: "SwiftModem link transport"),
                                           modem: try makeLinkModem(configuration: configuration, sampleRate: medium.sampleRate, tag: 1)),
                        device: LinkStation(machine: dm, modem: try makeLinkModem(configuration: configuration, sampleRate: medium.sampleRate, tag: 2)),
                        phoneHost: phoneHost, deviceHost: deviceHost, simulation: simulation)
        phoneHost.scheduler.bind { [runner] body in runner.perform { r in r.phone.perform(body(&r.phone.machine, r.medium.now)) } }
    }

    /// Runs `body` (the applications on both ends) in channel time and returns what it returned.
    /// The medium steps from channel time 0 until `body` returns or the medium ends by itself
    /// (``end(atChannelTime:reason:)``, ``end(when:reason:)``); then open transports, a dial and an
    /// accept end with `.localFailure`. Run a pair once.
    /// - Throws: what `body` threw, or ``ModemRuntime/SimulationError/deadlock`` when `body` waits
    ///   for something that never comes after the medium ended.
    public func run<T: Sendable>(_ body: @escaping @Sendable (LinkLoopbackPair) async throws -> T) async throws -> T {
        runner.start()
        return try await simulation.run { [self] in
            let result: Result<T, any Error>
            do { result = .success(try await body(self)) } catch { result = .failure(error) }
            runner.finish()
            return try result.get()
        }
    }

    /// The channel clock (the simulation's): give it to the applications' own timers.
    public var clock: SimulatedClock { simulation.clock }

    /// Opens the phone end (the channel protocol's handshake) and returns its transport.
    /// - Throws: ``ModemTransport/TransportError`` when no device answered (a muted line).
    public func dial() async throws(TransportError) -> LinkTransport {
        let session = sessionSeed.withLock { UInt8(truncatingIfNeeded: $0.next() % 255 + 1) }
        return try await phoneHost.dial(session: session)
    }

    /// The device end of the next connection the phone opens.
    public func accept() async throws(TransportError) -> LinkTransport {
        try await deviceHost.accept()
    }

    /// Channel time in seconds since the start (the phone's clock).
    public var now: Double { runner.channelTime }

    /// Mutes both lines for `seconds` of channel time, starting `after` seconds of channel time from
    /// now (a cut; noise goes on).
    public func mute(seconds: Double, after: Double = 0) {
        runner.perform { r in
            r.muteFrom = r.medium.now + max(0, after)
            r.muteUntil = r.muteFrom! + seconds
            r.pendingMute = true
        }
    }

    /// Whether a cut is scheduled or under way.
    public var isMuted: Bool { runner.mutedNow }

    /// Returns when no cut is scheduled or under way, or the medium has ended.
    public func lineRestored() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            runner.whenRestored(c)
        }
    }

    /// Ends the medium when channel time reaches `time` (nil: never), as ``stop()`` does but on the
    /// stepping thread, so it holds however the applications above wait: open transports, a dial
    /// and an accept end with `.localFailure(reason)`. A later call moves the end (a harness that
    /// gives up after a while without progress pushes it on with each step of progress).
    public func end(atChannelTime time: Double?, reason: String) {
        runner.perform { r in
            r.deadline = time
            r.deadlineReason = reason
        }
    }

    /// Ends the medium at the first step at which `condition` holds (checked once per 10 ms block
    /// of channel time; keep it cheap, e.g. an atomic load), as ``end(atChannelTime:reason:)`` does.
    public func end(when condition: @escaping @Sendable () -> Bool, reason: String) {
        runner.perform { r in r.endCondition = (condition, reason) }
    }

    /// Why the medium ended by itself (``end(atChannelTime:reason:)`` or ``end(when:reason:)``);
    /// nil while it runs or after ``stop()``.
    public var endReason: String? { runner.ended }

    /// Cuts (``mute(seconds:after:)``) that began so far.
    public var cutsMade: Int { runner.mutesStarted }

    /// Frames lost to ``LinkImpairments/frameLoss`` so far, both directions.
    public var framesLost: Int { runner.lostFrames }

    /// Counts of both machines (phone, device).
    public var statistics: (phone: LinkStatistics, device: LinkStatistics) { runner.machineStatistics }

    /// The turnarounds and frame air time measured on the line so far (``TurnaroundMeter``).
    public var turnarounds: TurnaroundMeter { runner.turnarounds.withLock { $0 } }

    /// How each end sends now (its modem's rate in bit/s and a description), phone first.
    public var lines: (phone: (bitRate: Double, description: String), device: (bitRate: Double, description: String)) {
        runner.modemLines.withLock { $0 }
    }

    /// The medium's stepping (an event of the simulation every 10 ms of channel time) and
    /// everything it owns.
    /// `@unchecked Sendable`: the medium and stations are used on the simulation's thread only (and
    /// in `init` before it starts); requests cross through the `Mutex`, published figures through a
    /// `Mutex`.
    final class Runner: @unchecked Sendable {
        let medium: LoopbackMedium
        let phone: LinkStation<PhoneStateMachine>
        let device: LinkStation<DeviceStateMachine>
        let phoneHost: PhoneLinkHost
        let deviceHost: DeviceLinkHost
        let simulation: Simulation
        /// One block of the medium, in nanoseconds of channel time.
        static let blockNanoseconds: Int64 = 10_000_000
        var muteUntil: Double?
        var muteFrom: Double?
        /// A cut is scheduled or under way (published as ``LinkLoopbackPair/isMuted``).
        var pendingMute = false
        /// Cuts that began.
        var mutes = 0
        /// Channel time at which the medium ends by itself, and why.
        var deadline: Double?
        var deadlineReason = ""
        var endCondition: (@Sendable () -> Bool, String)?
        private let requests = Mutex<[@Sendable (Runner) -> Void]>([])
        private let published = Mutex((now: 0.0, muted: false, lost: 0, phone: LinkStatistics(), device: LinkStatistics(), mutes: 0))
        private let endedBy = Mutex<String?>(nil)
        private let restoredWaiters = Mutex<(waiting: [CheckedContinuation<Void, Never>], over: Bool)>(([], false))
        let turnarounds = Mutex(TurnaroundMeter())
        let modemLines = Mutex((phone: (bitRate: 0.0, description: ""), device: (bitRate: 0.0, description: "")))
        private var started = false
        private var steps: Int64 = 0

        init(medium: LoopbackMedium, phone: LinkStation<PhoneStateMachine>, device: LinkStation<DeviceStateMachine>,
             phoneHost: PhoneLinkHost, deviceHost: DeviceLinkHost, simulation: Simulation) {
            self.medium = medium
            self.phone = phone
            self.device = device
            self.phoneHost = phoneHost
            self.deviceHost = deviceHost
            self.simulation = simulation
        }

        var channelTime: Double { published.withLock { $0.now } }
        var mutedNow: Bool { published.withLock { $0.muted } }
        var lostFrames: Int { published.withLock { $0.lost } }
        var mutesStarted: Int { published.withLock { $0.mutes } }
        var ended: String? { endedBy.withLock { $0 } }
        var machineStatistics: (phone: LinkStatistics, device: LinkStatistics) { published.withLock { ($0.phone, $0.device) } }

        func perform(_ body: @escaping @Sendable (Runner) -> Void) { requests.withLock { $0.append(body) } }

        /// Schedules the first block (once).
        func start() {
            precondition(!started, "a LinkLoopbackPair runs once")
            started = true
            scheduleNextBlock()
        }

        /// The applications are done: the medium steps no more.
        func finish() {
            phoneHost.stop(.localFailure("the loopback medium stopped"))
            deviceHost.stop(.localFailure("the loopback medium stopped"))
            over()
        }

        func whenRestored(_ c: CheckedContinuation<Void, Never>) {
            let now = restoredWaiters.withLock { w -> Bool in
                if w.over || !published.withLock({ $0.muted }) { return true }
                w.waiting.append(c)
                return false
            }
            if now { c.resume() }
        }

        private func restored(final: Bool) {
            let waiting = restoredWaiters.withLock { w -> [CheckedContinuation<Void, Never>] in
                if final { w.over = true }
                defer { w.waiting.removeAll() }
                return w.waiting
            }
            for c in waiting { c.resume() }
        }

        private func over() {
            endedOrFinished = true
            restored(final: true)
        }
        private var endedOrFinished = false

        private func scheduleNextBlock() {
            simulation.schedule(at: (steps + 1) * Self.blockNanoseconds) { [self] in self.block() }
        }

        private func runRequests() {
            let pending = requests.withLock { r -> [@Sendable (Runner) -> Void] in
                defer { r.removeAll() }
                return r
            }
            for body in pending { body(self) }
        }

        private func service() {
            let now = medium.now
            phone.perform(phoneHost.service(&phone.machine, now: now))
            device.perform(deviceHost.service(&device.machine, now: now))
        }

        /// One 10 ms block, run by the simulation when every application task is idle.
        private func block() {
            guard !endedOrFinished else { return }
            steps += 1
            runRequests()
            service()
            if let from = muteFrom, medium.now >= from { medium.muted = true; muteFrom = nil; mutes += 1 }
            var unmuted = false
            if let until = muteUntil, muteFrom == nil, medium.now >= until {
                medium.muted = false
                muteUntil = nil
                pendingMute = false
                unmuted = true
            }
            do {
                try medium.step(phone: phone, device: device)
            } catch {
                end("the loopback medium failed: \(error)")
                return
            }
            let now = medium.now
            deviceHost.note(session: device.machine.session)
            for e in phone.takeEvents() { phoneHost.handle(e, now: now) }
            for e in device.takeEvents() { deviceHost.handle(e, now: now) }
            published.withLock {
                $0 = (now, pendingMute, medium.framesLost.toDevice + medium.framesLost.toPhone,
                      phone.machine.statistics, device.machine.statistics, mutes)
            }
            turnarounds.withLock { $0 = medium.turnarounds }
            modemLines.withLock {
                $0 = ((phone.modem.sendBitRate, phone.modem.sendDescription), (device.modem.sendBitRate, device.modem.sendDescription))
            }
            if unmuted { restored(final: false) }
            runRequests()
            if let d = deadline, now >= d {
                return end(deadlineReason)
            } else if let (condition, why) = endCondition, condition() {
                return end(why)
            }
            scheduleNextBlock()
        }

        /// The medium ends by itself: every wait on the link ends with `.localFailure(reason)`.
        private func end(_ reason: String) {
            endedBy.withLock { $0 = reason }
            phoneHost.stop(.localFailure(reason))
            deviceHost.stop(.localFailure(reason))
            over()
        }
    }
}
