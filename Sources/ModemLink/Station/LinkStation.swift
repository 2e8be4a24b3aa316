import ModemCodecs
import ModemDSP
import ModemRuntime

/// One end of the link, without I/O: a state machine and a modem (``LinkAudioModem``: ``LinkModem``
/// or ``OFDMLinkModem``). A driver feeds it blocks of
/// received audio and takes blocks to play, giving the time (in seconds of any clock) of each block.
/// API calls go to ``machine`` and their actions to ``perform(_:)``.
public final class LinkStation<Machine: LinkMachine> {
    /// The state machine.
    public var machine: Machine
    /// The modem.
    public let modem: any LinkAudioModem
    /// Set when the machine asked for its audio resources to be released.
    public private(set) var releaseRequested = false
    private var pendingEvents: [LinkEvent] = []

    /// Channel access on a shared medium (both ends on one line, each hearing the other and itself):
    /// a transmission waits a random number of slots (0...`maximumSlots`) and until nothing has been
    /// heard for half a slot. Nil (the default): transmit at once, as on a two-wire audio-jack cable.
    public var sharedMedium: (slotSeconds: Double, maximumSlots: Int)?
    private var deferred: [LinkFrame] = []
    private var releaseAt: Double?
    private var lastBusy = -Double.infinity
    private var clock = 0.0
    private var backoff = SplitMix64(seed: 0x5EED)

    /// Creates a station.
    public init(machine: Machine, modem: any LinkAudioModem) {
        self.machine = machine
        self.modem = modem
    }

    /// Carries out actions: frames are queued on the modem, events kept for ``takeEvents()``.
    public func perform(_ actions: [LinkAction]) {
        for a in actions {
            switch a {
            case .transmit(let frames):
                if let shared = sharedMedium, !modem.isTransmitting {
                    deferred += frames
                    if releaseAt == nil {
                        // Answers (acknowledgements) go sooner: at most one slot.
                        let answers = frames.allSatisfy { [.ack, .helloAck, .cancelAck, .closeAck].contains($0.kind) }
                        releaseAt = clock + draw((shared.slotSeconds, answers ? min(1, shared.maximumSlots) : shared.maximumSlots))
                    }
                } else {
                    modem.send(frames)
                }
            case .event(let e): pendingEvents.append(e)
            case .releaseResources: releaseRequested = true
            }
        }
    }

    private func draw(_ shared: (slotSeconds: Double, maximumSlots: Int)) -> Double {
        shared.slotSeconds * Double(backoff.next() % UInt64(shared.maximumSlots + 1))
    }

    /// Turns on channel access for a shared line (``LinkConfiguration/sharedMediumAccess``), with its
    /// own backoff seed (stations sharing a line need different seeds).
    public func useSharedMedium(_ configuration: LinkConfiguration, seed: UInt64) {
        sharedMedium = configuration.sharedMediumAccess
        backoff = SplitMix64(seed: seed)
        modem.useSharedMedium()
    }

    /// The events reported since the last call.
    public func takeEvents() -> [LinkEvent] {
        defer { pendingEvents.removeAll() }
        return pendingEvents
    }

    /// Feeds a block of received audio ending at time `now`, then lets time pass.
    public func receive(_ samples: UnsafeBufferPointer<Float>, now: Double) {
        clock = now
        let (frames, foreign) = modem.receive(samples)
        if modem.hearsCarrier { lastBusy = now }
        if foreign { machine.heardSignal() }
        for f in frames { perform(machine.receive(f, now: now)) }
        perform(machine.tick(now: now))
    }

    /// The next `count` samples to play, starting at time `now`; tells the machine when its
    /// transmission ends.
    public func output(count: Int, now: Double) -> (samples: [Float], frameSpans: [Range<Int>]) {
        clock = now
        if let shared = sharedMedium, !deferred.isEmpty, let r = releaseAt, now >= r {
            if now - lastBusy >= shared.slotSeconds / 2 {
                modem.send(deferred)
                deferred.removeAll()
                releaseAt = nil
            } else {
                releaseAt = now + draw(shared)
            }
        }
        let o = modem.output(count: count)
        if o.finished {
            let end = now + Double(count) / Double(modem.sampleRate)
            perform(machine.transmitted(now: end))
        }
        return (o.samples, o.frameSpans)
    }
}
