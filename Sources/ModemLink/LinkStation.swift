import ModemCodecs

/// A state machine the ``LinkStation`` can drive: ``PhoneStateMachine`` or ``DeviceStateMachine``.
public protocol LinkMachine: Sendable {
    /// A frame arrived.
    mutating func receive(_ frame: LinkFrame, now: Double) -> [LinkAction]
    /// Time passes.
    mutating func tick(now: Double) -> [LinkAction]
    /// The driver finished playing what it was given.
    mutating func transmitted(now: Double) -> [LinkAction]
    /// Frames of another protocol or version were heard.
    mutating func heardSignal()
}

extension PhoneStateMachine: LinkMachine {}
extension DeviceStateMachine: LinkMachine {
    /// Nothing to do for a device.
    public mutating func heardSignal() {}
}

/// One end of the link, without I/O: a state machine and a ``LinkModem``. A driver feeds it blocks of
/// received audio and takes blocks to play, giving the time (in seconds of any clock) of each block.
/// API calls go to ``machine`` and their actions to ``perform(_:)``.
public final class LinkStation<Machine: LinkMachine> {
    /// The state machine.
    public var machine: Machine
    /// The modem.
    public let modem: LinkModem
    /// Set when the machine asked for its audio resources to be released.
    public private(set) var releaseRequested = false
    private var pendingEvents: [LinkEvent] = []

    /// Creates a station.
    public init(machine: Machine, modem: LinkModem) {
        self.machine = machine
        self.modem = modem
    }

    /// Carries out actions: frames are queued on the modem, events kept for ``takeEvents()``.
    public func perform(_ actions: [LinkAction]) {
        for a in actions {
            switch a {
            case .transmit(let frames): modem.send(frames)
            case .event(let e): pendingEvents.append(e)
            case .releaseResources: releaseRequested = true
            }
        }
    }

    /// The events reported since the last call.
    public func takeEvents() -> [LinkEvent] {
        defer { pendingEvents.removeAll() }
        return pendingEvents
    }

    /// Feeds a block of received audio ending at time `now`, then lets time pass.
    public func receive(_ samples: UnsafeBufferPointer<Float>, now: Double) {
        let (frames, foreign) = modem.receive(samples)
        if foreign { machine.heardSignal() }
        for f in frames { perform(machine.receive(f, now: now)) }
        perform(machine.tick(now: now))
    }

    /// The next `count` samples to play, starting at time `now`; tells the machine when its
    /// transmission ends.
    public func output(count: Int, now: Double) -> (samples: [Float], frameSpans: [Range<Int>]) {
        let o = modem.output(count: count)
        if o.finished {
            let end = now + Double(count) / Double(modem.sampleRate)
            perform(machine.transmitted(now: end))
        }
        return (o.samples, o.frameSpans)
    }
}
