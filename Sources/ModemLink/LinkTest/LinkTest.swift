import Foundation
import ModemCodecs
import ModemDSP
import ModemRuntime

/// What a ``LinkTest`` runs.
public struct LinkTestOptions: Sendable, Hashable {
    /// The protocol parameters (mode, baud rate...).
    public var configuration: LinkConfiguration
    /// Exchanges to run.
    public var count: Int
    /// Bytes each side sends per exchange (1...maximum message size).
    public var size: Int
    /// Exchange timeout in seconds; nil: ``LinkConfiguration/suggestedTimeout(bytes:)``.
    public var timeout: Double?
    /// Seed of the payloads (and of the session number).
    public var seed: UInt64

    /// Creates options.
    public init(configuration: LinkConfiguration, count: Int, size: Int, timeout: Double? = nil, seed: UInt64 = 1) {
        self.configuration = configuration
        self.count = count
        self.size = size
        self.timeout = timeout
        self.seed = seed
    }

    /// The exchange timeout in seconds.
    public var effectiveTimeout: Double { timeout ?? configuration.suggestedTimeout(bytes: size) }
}

/// Runs a phone against a device emulator over a ``LinkMedium`` and counts what really arrived.
///
/// Master-slave: each exchange sends `size` random bytes; the emulator replies with the same bytes.
/// Duplex: in each exchange both sides send `size` random bytes at once; it completes when both
/// messages were acknowledged and arrived intact.
public final class LinkTest {
    /// The options.
    public let options: LinkTestOptions
    /// The medium.
    public let medium: any LinkMedium
    /// The phone.
    public let phone: LinkStation<PhoneStateMachine>
    /// The device emulator.
    public let device: LinkStation<DeviceStateMachine>

    private var rng: SplitMix64
    private var report = LinkTestReport()
    // Payloads sent, by content hash: direction 0 phone→device, 1 device→phone.
    private var sent: [[UInt64: Int]] = [[:], [:]]
    private var delivered: [Set<Int>] = [[], []]
    private var deliveredBits = 0

    /// Creates a test.
    /// - Throws: ``ModemSettingsError`` when the baud rate does not fit the medium's sample rate.
    public init(options: LinkTestOptions, medium: any LinkMedium) throws {
        precondition(options.count >= 0 && options.size >= 1 && options.size <= options.configuration.maximumMessageSize)
        self.options = options
        self.medium = medium
        rng = SplitMix64(seed: options.seed)
        phone = LinkStation(machine: PhoneStateMachine(configuration: options.configuration),
                            modem: try makeLinkModem(configuration: options.configuration, sampleRate: medium.sampleRate, tag: 1))
        var dm = DeviceStateMachine(configuration: options.configuration)
        dm.attach()
        device = LinkStation(machine: dm, modem: try makeLinkModem(configuration: options.configuration, sampleRate: medium.sampleRate, tag: 2))
        if medium.isShared {
            phone.useSharedMedium(options.configuration, seed: options.seed &+ 1)
            device.useSharedMedium(options.configuration, seed: options.seed &+ 2)
        }
    }

    /// Opens the link (up to three attempts), runs the exchanges and closes.
    /// - Parameters:
    ///   - shouldStop: polled between steps (e.g. on Ctrl-C); the report then covers what ran.
    ///   - progress: called after each exchange with the report so far.
    /// - Throws: audio device errors from the medium.
    public func run(shouldStop: () -> Bool = { false }, progress: (LinkTestReport) -> Void = { _ in }) throws -> LinkTestReport {
        // Open, as an application would: up to three times.
        var openCode: Int32?
        for _ in 0..<3 where openCode != ReturnCode.ok && !shouldStop() {
            openCode = nil
            phone.perform(phone.machine.open(session: UInt8(truncatingIfNeeded: rng.next() | 1), now: medium.now))
            while openCode == nil && !shouldStop() {
                try step()
                for e in phone.takeEvents() { if case .opened(let c, _) = e { openCode = c } }
            }
        }
        report.openCode = openCode ?? ReturnCode.noDevice
        report.opened = openCode == 0
        let start = medium.now
        var roundTrips = 0.0
        for _ in 0..<options.count {
            if shouldStop() { break }
            report.exchanges += 1
            let t0 = medium.now
            let ok = options.configuration.mode == .masterSlave ? try masterSlaveExchange(shouldStop) : try duplexExchange(shouldStop)
            if ok { report.completed += 1; roundTrips += medium.now - t0 }
            progress(report)
        }
        report.channelSeconds = medium.now - start
        if report.completed > 0 { report.meanRoundTripMs = roundTrips / Double(report.completed) * 1000 }
        if report.channelSeconds > 0 { report.goodputBps = Double(deliveredBits) / report.channelSeconds }
        // Close: the close signal, then what is left on the air.
        if report.opened {
            phone.perform(phone.machine.close(now: medium.now))
            var closed = false
            let limit = medium.now + 10 * options.configuration.acknowledgementTimeout + 5
            while !closed && medium.now < limit && !shouldStop() {
                try step()
                for e in phone.takeEvents() where e == .closed { closed = true }
            }
        }
        let ps = phone.machine.statistics, ds = device.machine.statistics
        report.framesSent = ps.framesSent + ds.framesSent
        report.retransmissions = ps.retransmissions + ds.retransmissions
        report.framesDamaged = phone.modem.framesDamaged + device.modem.framesDamaged
        report.framesCoded = phone.modem.codedFramesDecoded + device.modem.codedFramesDecoded
        report.duplicateFramesSuppressed = ps.duplicateFrames + ds.duplicateFrames
        if let m = medium as? LoopbackMedium { report.framesLost = m.framesLost.toDevice + m.framesLost.toPhone }
        return report
    }

    private func step() throws {
        try medium.step(phone: phone, device: device)
        // The emulator: echo requests (master-slave); deliveries are checked in `check`.
        for e in device.takeEvents() {
            deviceEvents.append(e)
            if case .received(let m, let data) = e, options.configuration.mode == .masterSlave {
                device.perform(device.machine.reply(data, to: m, now: medium.now).actions)
            }
        }
    }

    private var deviceEvents: [LinkEvent] = []

    private func payload() -> [UInt8] { rng.bytes(options.size) }

    private static func hash(_ d: [UInt8]) -> UInt64 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in d { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 }
        return h ^ UInt64(d.count)
    }

    /// Checks a delivery in `direction` against what was sent; returns the exchange index it belongs to
    /// if it is intact and new (a late delivery of an earlier exchange's message is new: it is not a
    /// duplicate unless that message was delivered before).
    private func check(_ data: [UInt8], direction: Int) -> Int? {
        guard let index = sent[direction][Self.hash(data)] else { report.corruptDelivered += 1; return nil }
        guard delivered[direction].insert(index).inserted else { report.duplicatesDelivered += 1; return nil }
        deliveredBits += data.count * 8
        return index
    }

    /// Processes device events: requests (or duplex messages) the device application received.
    private func drainDevice(expecting index: Int, arrived: inout Bool, deviceSend: inout Bool?) {
        for e in deviceEvents {
            switch e {
            case .received(_, let data):
                if check(data, direction: 0) == index { arrived = true }
            case .sendOK: deviceSend = deviceSend ?? true
            case .timeout: deviceSend = false
            default: break
            }
        }
        deviceEvents.removeAll()
    }

    private func masterSlaveExchange(_ shouldStop: () -> Bool) throws -> Bool {
        let index = report.exchanges - 1
        let data = payload()
        sent[0][Self.hash(data)] = index
        sent[1][Self.hash(data)] = index
        let (code, actions) = phone.machine.exchange(data, timeout: options.effectiveTimeout, now: medium.now)
        phone.perform(actions)
        guard code == 0 else { report.failed += 1; return false }
        var requestArrived = false, unused: Bool? = nil
        while !shouldStop() {
            try step()
            drainDevice(expecting: index, arrived: &requestArrived, deviceSend: &unused)
            for e in phone.takeEvents() {
                switch e {
                case .received(_, let reply):
                    let i = check(reply, direction: 1)
                    if i == index && requestArrived { return true }
                    // Another exchange's reply delivered as this one's is wrong data for this request.
                    if i != nil { report.corruptDelivered += 1 }
                    report.failed += 1
                    return false
                case .timeout:
                    report.timedOut += 1
                    return false
                case .error(let code, _) where code != .cancelSucceeded && code != .cancelFailed:
                    report.failed += 1
                    return false
                default: break
                }
            }
        }
        report.failed += 1
        return false
    }

    private func duplexExchange(_ shouldStop: () -> Bool) throws -> Bool {
        let index = report.exchanges - 1
        let mine = payload(), theirs = payload()
        sent[0][Self.hash(mine)] = index
        sent[1][Self.hash(theirs)] = index
        let timeout = options.effectiveTimeout
        let (code, actions) = phone.machine.exchange(mine, timeout: timeout, now: medium.now)
        phone.perform(actions)
        let (dcode, dactions) = device.machine.send(theirs, timeout: timeout, now: medium.now)
        device.perform(dactions)
        guard code == 0 else { report.failed += 1; return false }
        var phoneSend: Bool? = nil, deviceSend: Bool? = dcode == 0 ? nil : false
        var arrivedAtDevice = false, arrivedAtPhone = false
        var timedOut = false
        while !shouldStop() {
            try step()
            drainDevice(expecting: index, arrived: &arrivedAtDevice, deviceSend: &deviceSend)
            for e in phone.takeEvents() {
                switch e {
                case .received(_, let d):
                    if check(d, direction: 1) == index { arrivedAtPhone = true }
                case .sendOK: phoneSend = phoneSend ?? true
                case .timeout: phoneSend = false; timedOut = true
                case .error(let c, _) where c != .cancelSucceeded && c != .cancelFailed: phoneSend = false
                default: break
                }
            }
            if deviceSend == false { timedOut = true }
            if let p = phoneSend, let d = deviceSend {
                if p && d && arrivedAtPhone && arrivedAtDevice { return true }
                if timedOut { report.timedOut += 1 } else { report.failed += 1 }
                return false
            }
        }
        report.failed += 1
        return false
    }
}
