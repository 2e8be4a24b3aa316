import ModemCodecs
import ModemLinkProtocol
import ModemTestSupport

/// Which way a frame travels in a ``FrameLevelLink``.
enum FrameDirection: Sendable, Hashable {
    case toDevice, toPhone
}

/// What the modelled channel does with one frame.
enum FrameFate: Sendable, Hashable {
    case deliver, drop, duplicate
}

/// An event with the (modelled) time it was reported.
struct TimedEvent {
    var time: Double
    var event: LinkEvent
}

/// A phone and a device state machine connected at the frame level, without audio, on a modelled
/// clock (a Double advanced in fixed steps).
///
/// Each side has one transmitter: a `.transmit(frames)` action starts a transmission (a preamble,
/// then the frames back to back, each taking ``LinkConfiguration/airtime(payload:)``) or joins the
/// one under way (no new preamble, as ``LinkModem`` does). A frame reaches the other side's
/// `receive(_:now:)` at the first step at or after the end of its air time; when the last queued
/// frame of a side has gone, that side's `transmitted(now:)` is called. Both `tick(now:)`s run every
/// step. The two directions are independent (a two-wire cable: full duplex).
///
/// `channel` decides the fate of each frame when it is put on the air (deliver, drop, deliver twice).
/// `deviceApplication`, if set, answers each master-slave request at once (nil: no reply now).
final class FrameLevelLink {
    let configuration: LinkConfiguration
    var phone: PhoneStateMachine
    var device: DeviceStateMachine
    let step: Double
    private(set) var now: Double = 0

    var channel: (FrameDirection, LinkFrame) -> FrameFate = { _, _ in .deliver }
    var deviceApplication: ((UInt16, [UInt8]) -> [UInt8]?)?

    private(set) var phoneEvents: [TimedEvent] = []
    private(set) var deviceEvents: [TimedEvent] = []
    /// `.releaseResources` actions the phone (and the device) produced.
    private(set) var phoneReleaseRequests = 0
    private(set) var deviceReleaseRequests = 0
    /// Codes the device's `reply` returned when the application answered.
    private(set) var deviceReplyCodes: [Int32] = []
    /// Every frame put on the air, when, and its fate.
    private(set) var log: [(direction: FrameDirection, frame: LinkFrame, time: Double, fate: FrameFate)] = []
    /// The states each side went through (consecutive repeats collapsed), sampled after every call.
    private(set) var phoneStates: [PhoneStateMachine.State] = []
    private(set) var deviceStates: [DeviceStateMachine.State] = []

    private var phoneQueue: [(frame: LinkFrame, end: Double, fate: FrameFate)] = []
    private var deviceQueue: [(frame: LinkFrame, end: Double, fate: FrameFate)] = []

    init(configuration: LinkConfiguration = LinkConfiguration(), step: Double = 0.01, attachDevice: Bool = true) {
        self.configuration = configuration
        self.step = step
        phone = PhoneStateMachine(configuration: configuration)
        device = DeviceStateMachine(configuration: configuration, name: "test device")
        if attachDevice { device.attach() }
        recordStates()
    }

    // MARK: API calls (at the current time)

    func open(session: UInt8 = 0x5A) {
        perform(phone.open(session: session, now: now), on: .phone)
    }

    func exchange(_ data: [UInt8], timeout: Double) -> Int32 {
        let (code, actions) = phone.exchange(data, timeout: timeout, now: now)
        perform(actions, on: .phone)
        return code
    }

    func cancel() -> Int32 {
        let (code, actions) = phone.cancel(now: now)
        perform(actions, on: .phone)
        return code
    }

    func close() {
        perform(phone.close(now: now), on: .phone)
    }

    func deviceReply(_ data: [UInt8], to message: UInt16) -> Int32 {
        let (code, actions) = device.reply(data, to: message, now: now)
        perform(actions, on: .device)
        return code
    }

    func deviceSend(_ data: [UInt8], timeout: Double? = nil) -> Int32 {
        let (code, actions) = device.send(data, timeout: timeout, now: now)
        perform(actions, on: .device)
        return code
    }

    // MARK: Time

    /// One step of the clock: deliveries, end of transmissions, ticks.
    func advance() {
        now += step
        deliverDue(from: .phone)
        deliverDue(from: .device)
        perform(phone.tick(now: now), on: .phone)
        perform(device.tick(now: now), on: .device)
        recordStates()
    }

    /// Steps until `condition` holds or `seconds` have passed; returns whether it holds.
    @discardableResult
    func run(for seconds: Double, until condition: () -> Bool = { false }) -> Bool {
        let limit = now + seconds
        while !condition() {
            if now >= limit { return false }
            advance()
        }
        return true
    }

    /// Steps until both transmitters are idle (or `seconds` pass).
    @discardableResult
    func runUntilQuiet(limit seconds: Double = 60) -> Bool {
        run(for: seconds) { self.phoneQueue.isEmpty && self.deviceQueue.isEmpty }
    }

    /// Whether a side is still transmitting.
    var phoneTransmitting: Bool { !phoneQueue.isEmpty }
    var deviceTransmitting: Bool { !deviceQueue.isEmpty }

    // MARK: Queries

    func framesSent(_ direction: FrameDirection, _ kind: LinkFrame.Kind) -> [LinkFrame] {
        log.filter { $0.direction == direction && $0.frame.kind == kind }.map(\.frame)
    }

    /// Messages the phone application received.
    var phoneReceived: [(message: UInt16, data: [UInt8])] {
        phoneEvents.compactMap { if case .received(let m, let d) = $0.event { return (m, d) } else { return nil } }
    }

    /// Messages the device application received.
    var deviceReceived: [(message: UInt16, data: [UInt8])] {
        deviceEvents.compactMap { if case .received(let m, let d) = $0.event { return (m, d) } else { return nil } }
    }

    func phoneErrors() -> [CommunicationError] {
        phoneEvents.compactMap { if case .error(let e, _) = $0.event { return e } else { return nil } }
    }

    /// The phone's events, without progress reports.
    var phoneOutcomes: [LinkEvent] {
        phoneEvents.map(\.event).filter { if case .progress = $0 { return false } else { return true } }
    }

    var deviceOutcomes: [LinkEvent] {
        deviceEvents.map(\.event).filter { if case .progress = $0 { return false } else { return true } }
    }

    func openCode() -> Int32? {
        for e in phoneEvents { if case .opened(let code, _) = e.event { return code } }
        return nil
    }

    // MARK: Internals

    private enum Side { case phone, device }

    private func deliverDue(from side: Side) {
        while true {
            let queue = side == .phone ? phoneQueue : deviceQueue
            guard let first = queue.first, first.end <= now + 1e-9 else { return }
            if side == .phone { phoneQueue.removeFirst() } else { deviceQueue.removeFirst() }
            let copies = first.fate == .drop ? 0 : first.fate == .duplicate ? 2 : 1
            for _ in 0..<copies {
                switch side {
                case .phone: perform(device.receive(first.frame, now: now), on: .device)
                case .device: perform(phone.receive(first.frame, now: now), on: .phone)
                }
            }
            let empty = side == .phone ? phoneQueue.isEmpty : deviceQueue.isEmpty
            if empty {
                switch side {
                case .phone: perform(phone.transmitted(now: now), on: .phone)
                case .device: perform(device.transmitted(now: now), on: .device)
                }
            }
        }
    }

    private func transmit(_ frames: [LinkFrame], from side: Side) {
        let direction: FrameDirection = side == .phone ? .toDevice : .toPhone
        let queue = side == .phone ? phoneQueue : deviceQueue
        var t = queue.last?.end ?? (now + configuration.preambleSeconds)
        var entries: [(frame: LinkFrame, end: Double, fate: FrameFate)] = []
        for f in frames {
            t += configuration.airtime(payload: f.payload.count)
            let fate = channel(direction, f)
            log.append((direction, f, now, fate))
            entries.append((f, t, fate))
        }
        if side == .phone { phoneQueue += entries } else { deviceQueue += entries }
    }

    private func perform(_ actions: [LinkAction], on side: Side) {
        for action in actions {
            switch action {
            case .transmit(let frames):
                transmit(frames, from: side)
            case .releaseResources:
                if side == .phone { phoneReleaseRequests += 1 } else { deviceReleaseRequests += 1 }
            case .event(let e):
                switch side {
                case .phone:
                    phoneEvents.append(TimedEvent(time: now, event: e))
                case .device:
                    deviceEvents.append(TimedEvent(time: now, event: e))
                    if case .received(let m, let data) = e, configuration.mode == .masterSlave,
                       let app = deviceApplication, let answer = app(m, data) {
                        deviceReplyCodes.append(deviceReply(answer, to: m))
                    }
                }
            }
        }
        recordStates()
    }

    private func recordStates() {
        if phoneStates.last != phone.state { phoneStates.append(phone.state) }
        if deviceStates.last != device.state { deviceStates.append(device.state) }
    }
}

/// A rule for ``FrameLevelLink/channel``: the fate of the first `count` frames of `kind` going
/// `direction` is `fate`; everything else is delivered. Numbering starts at 1 (`occurrences: [1]` is
/// the first such frame).
final class FrameFilter {
    private var seen: [String: Int] = [:]
    private let rules: [(direction: FrameDirection, kind: LinkFrame.Kind, occurrences: Set<Int>?, fate: FrameFate)]

    /// - Parameter rules: occurrences nil means every frame of that kind in that direction.
    init(_ rules: [(direction: FrameDirection, kind: LinkFrame.Kind, occurrences: Set<Int>?, fate: FrameFate)]) {
        self.rules = rules
    }

    func fate(_ direction: FrameDirection, _ frame: LinkFrame) -> FrameFate {
        let key = "\(direction)-\(frame.kind)"
        let n = (seen[key] ?? 0) + 1
        seen[key] = n
        for r in rules where r.direction == direction && r.kind == frame.kind {
            if r.occurrences == nil || r.occurrences!.contains(n) { return r.fate }
        }
        return .deliver
    }
}
