import ModemAudio
import ModemCodecs
import ModemDSP
import ModemRuntime

/// Short messages (such as pairing messages) on a shared audio line, over the link's ``LinkModem``:
/// every end plays into and hears the same line, itself included. A message is the payload of one
/// ``LinkFrame`` (so the frame's CRC-32 and the HDLC FCS-16 check it); the frame is a `cancelAck`
/// without the device flag, in session 0, with message number ``messageMarker`` ("PA"): a phone
/// ignores frames without the device flag, a device counts a `cancelAck` as stale, so a link station
/// on the same line is not disturbed.
///
/// Channel access: a message waits a random backoff of 0...``maximumSlots`` slots, then until the
/// line has been quiet (no carrier) for half a slot, as ``LinkStation``'s shared medium does.
/// Messages queued while one plays join its transmission.
///
/// No I/O: a driver (``SharedLineDriver``, ``InMemorySharedLine``) feeds received audio with
/// ``receive(_:now:)`` and plays what ``output(count:now:)`` returns.
public final class SharedLineFrameLine {
    /// The message number that marks frames of this line.
    public static let messageMarker: UInt16 = 0x5041
    /// The modem.
    public let modem: LinkModem
    /// Backoff slot, seconds.
    public let slotSeconds: Double
    /// Most backoff slots drawn.
    public let maximumSlots: Int
    /// Messages heard (frames of this line with a good CRC), own included.
    public private(set) var messagesHeard = 0

    private var queued: [LinkFrame] = []
    private var releaseAt: Double?
    private var lastBusy = -Double.infinity
    private var random: SplitMix64

    /// Creates a line end.
    /// - Parameters:
    ///   - configuration: baud rate and preamble.
    ///   - sampleRate: Hz.
    ///   - seed: the backoff generator's seed (ends sharing a line need different seeds).
    ///   - slotSeconds: backoff slot (default 0.1 s).
    ///   - maximumSlots: most slots drawn (default 1: answers go soon).
    ///   - amplitude: tone level, 0 < a <= 1 (default 0.5).
    /// - Throws: ``ModemSettingsError`` when the baud rate does not fit the sample rate.
    public init(configuration: LinkConfiguration, sampleRate: Int, seed: UInt64, slotSeconds: Double = 0.1,
                maximumSlots: Int = 1, amplitude: Float = 0.5) throws {
        precondition(slotSeconds > 0 && maximumSlots >= 0)
        modem = try LinkModem(configuration: configuration, sampleRate: sampleRate, amplitude: amplitude)
        self.slotSeconds = slotSeconds
        self.maximumSlots = maximumSlots
        random = SplitMix64(seed: seed)
    }

    /// The frame that carries `payload` (at most ``LinkFrame/maximumPayload`` bytes).
    public static func frame(carrying payload: [UInt8]) -> LinkFrame {
        LinkFrame(kind: .cancelAck, flags: [], session: 0, message: messageMarker, payload: payload)
    }

    /// The payload when `frame` is a frame of this line, else nil.
    public static func payload(of frame: LinkFrame) -> [UInt8]? {
        guard frame.kind == .cancelAck, !frame.flags.contains(.fromDevice), frame.session == 0,
              frame.message == messageMarker, frame.fragmentCount == 1 else { return nil }
        return frame.payload
    }

    /// Whether something is playing or waiting to play.
    public var isBusy: Bool { modem.isTransmitting || !queued.isEmpty }

    /// Queues a message: it joins a transmission that is playing, else waits for its turn on the line.
    public func send(_ payload: [UInt8]) {
        let f = Self.frame(carrying: payload)
        if modem.isTransmitting {
            modem.send([f])
            return
        }
        queued.append(f)
        if releaseAt == nil { releaseAt = -1 }   // drawn at the next output, on that clock
    }

    /// Drops the messages that wait for their turn (what already plays finishes).
    public func cancelQueued() {
        queued.removeAll()
        releaseAt = nil
    }

    /// Feeds received audio ending at `now` (seconds); returns the messages completed in it.
    public func receive(_ samples: UnsafeBufferPointer<Float>, now: Double) -> [[UInt8]] {
        let (frames, _) = modem.receive(samples)
        if modem.hearsCarrier { lastBusy = now }
        var out: [[UInt8]] = []
        for f in frames {
            if let p = Self.payload(of: f) { out.append(p); messagesHeard += 1 }
        }
        return out
    }

    /// The next `count` samples to play, starting at `now`, and whether a transmission ended in them.
    public func output(count: Int, now: Double) -> (samples: [Float], transmissionEnded: Bool) {
        if !queued.isEmpty, let r = releaseAt {
            if r < 0 {
                releaseAt = now + draw()
            } else if now >= r {
                if now - lastBusy >= slotSeconds / 2 {
                    modem.send(queued)
                    queued.removeAll()
                    releaseAt = nil
                } else {
                    releaseAt = now + draw()
                }
            }
        }
        let o = modem.output(count: count)
        return (o.samples, o.finished)
    }

    private func draw() -> Double {
        maximumSlots == 0 ? 0 : slotSeconds * Double(random.next() % UInt64(maximumSlots + 1))
    }
}

/// What a ``SharedLineDriver`` or ``InMemorySharedLine`` tells its client.
public enum SharedLineInput: Sendable, Hashable {
    /// A message was heard (possibly this end's own).
    case heard([UInt8])
    /// This end's transmission ended.
    case transmitted
    /// Time passed (once per block).
    case tick
}

/// What a client asks of its line.
public enum SharedLineCommand: Sendable, Hashable {
    /// Queue a message.
    case send([UInt8])
    /// Drop queued messages that have not started playing.
    case cancelQueued
    /// Stop once what is queued and playing has been played.
    case stop
}

extension SharedLineFrameLine {
    /// Carries out a client's commands; returns whether it asked to stop.
    func apply(_ commands: [SharedLineCommand]) -> Bool {
        var stop = false
        for c in commands {
            switch c {
            case .send(let p): send(p)
            case .cancelQueued: cancelQueued()
            case .stop: stop = true
            }
        }
        return stop
    }

    /// One block: hears `samples`, lets the client act, returns what to play and whether the client
    /// is done (it asked to stop and nothing is left to play).
    func step(_ samples: UnsafeBufferPointer<Float>, count: Int, now: Double, stopping: inout Bool,
              client: (SharedLineInput, Double) -> [SharedLineCommand]) -> (samples: [Float], done: Bool) {
        for m in receive(samples, now: now) {
            if apply(client(.heard(m), now)) { stopping = true }
        }
        if apply(client(.tick, now)) { stopping = true }
        let o = output(count: count, now: now)
        if o.transmissionEnded {
            let end = now + Double(count) / Double(modem.sampleRate)
            if apply(client(.transmitted, end)) { stopping = true }
        }
        return (o.samples, stopping && !isBusy)
    }
}
