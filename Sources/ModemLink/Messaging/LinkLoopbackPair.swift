import Foundation
import ModemDSP
import ModemTransport
import Synchronization

/// Both ends of a link transport over the in-memory ``LoopbackMedium`` (two one-way lines with
/// noise and frame loss), stepped on one thread in channel time: 10 ms blocks, each as fast as it
/// computes. ``dial()`` opens the phone end, ``accept()`` gives the device end of each connection.
///
/// Channel time waits for the applications: after a frame or an acknowledgement was handed to an
/// application, the medium does not step until that application called the transport again and
/// was quiet for a moment (``settleMicroseconds``), or until it had ``reactionLimitMilliseconds``
/// of time with the cooperative pool free to run its tasks. So the time an application computes,
/// or waits for a thread of the pool, is not counted as channel time, and a transfer's channel
/// time does not depend on how loaded the machine is: an application starved of the pool for
/// seconds (synchronous tests side by side on two cores) does not find its keepalive and give-up
/// timers run out in channel time meanwhile. While the pool is busy (a probe task waits for a thread)
/// the medium does not step at all, so a task that has yet to start (a send about to be queued) is not
/// left behind either. ``hangGuardSeconds`` of wall time end any wait.
///
/// Channel time starts at the first ``dial()``: the medium does not step before it.
///
/// ``mute(seconds:)`` cuts both lines for a while of channel time (a cut cable).
public final class LinkLoopbackPair: Sendable {
    /// The protocol parameters (duplex).
    public let configuration: LinkConfiguration
    /// The transports' timers.
    public let options: LinkTransportOptions
    /// Quiet time (wall clock) after an application's last call before the medium steps on.
    public let settleMicroseconds: UInt64
    /// The longest the medium waits for an application to react to what it was handed, counted in
    /// time the cooperative pool was free to run the application's tasks.
    public let reactionLimitMilliseconds: UInt64
    /// The longest the medium waits (wall clock) for an application, however busy the pool: 60 s.
    public static let hangGuardSeconds: UInt64 = 60

    private let phoneHost: PhoneLinkHost
    private let deviceHost: DeviceLinkHost
    private let runner: Runner
    private let sessionSeed = Mutex(SplitMix64(seed: 1))

    /// Creates the pair (not started).
    /// - Parameters:
    ///   - configuration: the protocol parameters; must be duplex.
    ///   - impairments: noise, loss, drift and their seed.
    ///   - options: the transports' timers (keepalive, silence).
    ///   - settleMicroseconds: see ``settleMicroseconds`` (default 2000).
    ///   - reactionLimitMilliseconds: see ``reactionLimitMilliseconds`` (default 1000).
    /// - Throws: ``ModemSettingsError`` when the baud rate does not fit 48 kHz.
    public init(configuration: LinkConfiguration, impairments: LinkImpairments = LinkImpairments(),
                options: LinkTransportOptions = LinkTransportOptions(),
                settleMicroseconds: UInt64 = 2000, reactionLimitMilliseconds: UInt64 = 1000) throws {
        precondition(configuration.mode == .duplex, "LinkLoopbackPair runs the channel protocol in duplex mode")
        self.configuration = configuration
        self.options = options
        self.settleMicroseconds = settleMicroseconds
        self.reactionLimitMilliseconds = reactionLimitMilliseconds
        phoneHost = PhoneLinkHost(configuration: configuration, options: options)
        deviceHost = DeviceLinkHost(configuration: configuration, options: options)
        sessionSeed.withLock { $0 = SplitMix64(seed: impairments.seed ^ 0x5E55_1011) }
        let medium = LoopbackMedium(impairments: impairments,
                                    signalAmplitude: configuration.usesOFDM ? OFDMLinkModem.signalAmplitude : 0.5)
        var dm = DeviceStateMachine(configuration: configuration, name: "SwiftModem link transport")
        dm.attach()
        runner = Runner(medium: medium,
                        phone: LinkStation(machine: PhoneStateMachine(configuration: configuration, name: "SwiftModem link transport"),
                                           modem: try makeLinkModem(configuration: configuration, sampleRate: medium.sampleRate, tag: 1)),
                        device: LinkStation(machine: dm, modem: try makeLinkModem(configuration: configuration, sampleRate: medium.sampleRate, tag: 2)),
                        phoneHost: phoneHost, deviceHost: deviceHost,
                        settle: settleMicroseconds * 1000, limit: reactionLimitMilliseconds * 1_000_000)
        phoneHost.scheduler.bind { [runner] body in runner.perform { r in r.phone.perform(body(&r.phone.machine, r.medium.now)) } }
    }

    /// Starts stepping the medium on its own thread.
    public func start() { runner.start() }

    /// Stops the thread; open transports end with `.localFailure`.
    public func stop() {
        runner.stop()
        phoneHost.stop(.localFailure("the loopback medium stopped"))
        deviceHost.stop(.localFailure("the loopback medium stopped"))
    }

    /// Opens the phone end (the channel protocol's handshake) and returns its transport.
    /// - Throws: ``ModemTransport/TransportError`` when no device answered (a muted line).
    public func dial() async throws(TransportError) -> LinkTransport {
        runner.dialed.store(true, ordering: .relaxed)
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

    /// How each end sends now (its modem's rate in bit/s and a description), phone first.
    public var lines: (phone: (bitRate: Double, description: String), device: (bitRate: Double, description: String)) {
        runner.modemLines.withLock { $0 }
    }

    /// The stepping thread and everything it owns.
    /// `@unchecked Sendable`: the medium and stations are used on the runner thread only (and in
    /// `init` before it starts); requests cross through the `Mutex`, published figures through `Atomic`s
    /// and a `Mutex`.
    final class Runner: @unchecked Sendable {
        let medium: LoopbackMedium
        let phone: LinkStation<PhoneStateMachine>
        let device: LinkStation<DeviceStateMachine>
        let phoneHost: PhoneLinkHost
        let deviceHost: DeviceLinkHost
        let settle: UInt64
        let limit: UInt64
        private let poolClock = CooperativePoolClock()
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
        private let stopFlag = Atomic<Bool>(false)
        /// Channel time starts with the first dial: until then nothing is on the line, and the
        /// medium does not step (how long a caller takes to dial is no channel time).
        let dialed = Atomic<Bool>(false)
        private let published = Mutex((now: 0.0, muted: false, lost: 0, phone: LinkStatistics(), device: LinkStatistics(), mutes: 0))
        private let endedBy = Mutex<String?>(nil)
        let modemLines = Mutex((phone: (bitRate: 0.0, description: ""), device: (bitRate: 0.0, description: "")))
        private let finished = NSCondition()
        private var started = false
        private var done = false

        init(medium: LoopbackMedium, phone: LinkStation<PhoneStateMachine>, device: LinkStation<DeviceStateMachine>,
             phoneHost: PhoneLinkHost, deviceHost: DeviceLinkHost, settle: UInt64, limit: UInt64) {
            self.medium = medium
            self.phone = phone
            self.device = device
            self.phoneHost = phoneHost
            self.deviceHost = deviceHost
            self.settle = settle
            self.limit = limit
        }

        var channelTime: Double { published.withLock { $0.now } }
        var mutedNow: Bool { published.withLock { $0.muted } }
        var lostFrames: Int { published.withLock { $0.lost } }
        var mutesStarted: Int { published.withLock { $0.mutes } }
        var ended: String? { endedBy.withLock { $0 } }
        var machineStatistics: (phone: LinkStatistics, device: LinkStatistics) { published.withLock { ($0.phone, $0.device) } }

        func perform(_ body: @escaping @Sendable (Runner) -> Void) { requests.withLock { $0.append(body) } }

        func start() {
            finished.lock()
            defer { finished.unlock() }
            guard !started else { return }
            started = true
            let t = Thread { [self] in self.loop() }
            t.name = "modem-link-loopback"
            t.start()
        }

        func stop() {
            stopFlag.store(true, ordering: .relaxed)
            finished.lock()
            while started && !done { finished.wait() }
            finished.unlock()
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

        private func settled() -> Bool {
            let reading = poolClock.now()
            let guardNanoseconds = LinkLoopbackPair.hangGuardSeconds * 1_000_000_000
            // While the pool is busy, an application task that has not started yet (a send about to
            // be queued) must not be left behind by channel time; the hang guard ends such a wait too.
            if reading.busy && reading.busyNanoseconds < guardNanoseconds { return false }
            let p = phoneHost.current?.isSettled(quiet: settle, limit: limit, poolTime: reading.elapsed, hangGuard: guardNanoseconds) ?? true
            let d = deviceHost.current?.isSettled(quiet: settle, limit: limit, poolTime: reading.elapsed, hangGuard: guardNanoseconds) ?? true
            return p && d
        }

        private func loop() {
            while !dialed.load(ordering: .relaxed) && !stopFlag.load(ordering: .relaxed) {
                runRequests()
                usleep(100)
            }
            while !stopFlag.load(ordering: .relaxed) {
                runRequests()
                service()
                // Wait for the applications to take in what they were handed.
                while !settled() && !stopFlag.load(ordering: .relaxed) {
                    usleep(100)
                    runRequests()
                    service()
                }
                if let from = muteFrom, medium.now >= from { medium.muted = true; muteFrom = nil; mutes += 1 }
                if let until = muteUntil, muteFrom == nil, medium.now >= until {
                    medium.muted = false
                    muteUntil = nil
                    pendingMute = false
                }
                do {
                    try medium.step(phone: phone, device: device)
                } catch {
                    break
                }
                let now = medium.now
                deviceHost.note(session: device.machine.session)
                for e in phone.takeEvents() { phoneHost.handle(e, now: now) }
                for e in device.takeEvents() { deviceHost.handle(e, now: now) }
                published.withLock {
                    $0 = (now, pendingMute, medium.framesLost.toDevice + medium.framesLost.toPhone,
                          phone.machine.statistics, device.machine.statistics, mutes)
                }
                modemLines.withLock {
                    $0 = ((phone.modem.sendBitRate, phone.modem.sendDescription), (device.modem.sendBitRate, device.modem.sendDescription))
                }
                runRequests()
                var reason: String?
                if let d = deadline, now >= d {
                    reason = deadlineReason
                } else if let (condition, why) = endCondition, condition() {
                    reason = why
                }
                if let reason {
                    endedBy.withLock { $0 = reason }
                    phoneHost.stop(.localFailure(reason))
                    deviceHost.stop(.localFailure(reason))
                    break
                }
            }
            finished.lock()
            done = true
            finished.broadcast()
            finished.unlock()
        }
    }
}
