import ModemCodecs

/// What a ``StreamLinkStation`` asks its driver to do.
public enum StreamLinkAction: Sendable, Equatable {
    /// Write these bytes to the stream (one transmission of the machine: its frames back to back).
    case write([UInt8])
    /// Tell the application.
    case event(LinkEvent)
    /// The machine is done with the link (after close or close-resources): release the transport.
    case releaseResources
}

/// One end of the channel protocol over a reliable byte stream (Bluetooth RFCOMM, TCP), without
/// I/O: a state machine and a ``ModemCodecs/LinkStreamDecoder``. A pure value, the byte-stream
/// counterpart of the audio `LinkStation`: a driver feeds it the bytes it reads and the passing of
/// time, and carries out the ``StreamLinkAction``s it returns. Frames are written back to back with
/// ``ModemCodecs/LinkFrame/encode()`` (no HDLC).
///
/// API calls go to ``machine``, their actions through ``perform(_:)``:
/// ```swift
/// var station = StreamLinkStation(machine: PhoneStateMachine(configuration: .byteStream(mode: .duplex)))
/// var actions = station.perform(station.machine.open(session: 7, now: now))
/// actions += station.received(bytes: bytesRead, now: now)   // as bytes arrive
/// actions += station.tick(now: now)                          // every 10 ms or so
/// actions += station.transmitted(now: now)                   // once the writes so far have left
/// ```
///
/// The driver calls ``transmitted(now:)`` when what it was told to write has left its queue (the
/// RFCOMM credits allowed it, the socket took it): the machine's acknowledgement timers start then.
/// It must do so before it hands the station bytes that may answer those writes: an acknowledgement
/// that arrives before the machine knows its burst has left counts as a late answer to an earlier
/// poll, and the missing fragments it names are not sent again until the next poll.
public struct StreamLinkStation<Machine: LinkMachine>: Sendable {
    /// The state machine.
    public var machine: Machine
    /// The stream's frame decoder (its counters are the channel damage seen at this end).
    public private(set) var decoder = LinkStreamDecoder()
    /// Seconds without new bytes after which a frame still being waited for is given up
    /// (``ModemCodecs/LinkStreamDecoder/resynchronize()``): junk that looked like a header must not
    /// hold back the frames behind it.
    public let stallTimeout: Double
    /// Bytes handed to the driver for writing.
    public private(set) var bytesWritten = 0
    /// Bytes received.
    public private(set) var bytesReceived = 0
    /// Set once the machine asked for the transport to be released.
    public private(set) var releaseRequested = false

    private var lastBytesAt = -Double.infinity
    private var damageSeen = 0

    /// Creates a station.
    /// - Parameters:
    ///   - machine: a ``PhoneStateMachine`` or a ``DeviceStateMachine`` (attached).
    ///   - stallTimeout: seconds of silence after which a partial frame is given up (default 0.5).
    public init(machine: Machine, stallTimeout: Double = 0.5) {
        self.machine = machine
        self.stallTimeout = stallTimeout
    }

    /// Turns the machine's actions into the driver's: frames are encoded into one write.
    public mutating func perform(_ actions: [LinkAction]) -> [StreamLinkAction] {
        var out: [StreamLinkAction] = []
        for action in actions {
            switch action {
            case .transmit(let frames):
                var bytes: [UInt8] = []
                for f in frames { bytes += f.encode() }
                guard !bytes.isEmpty else { continue }
                bytesWritten += bytes.count
                out.append(.write(bytes))
            case .event(let e):
                out.append(.event(e))
            case .releaseResources:
                releaseRequested = true
                out.append(.releaseResources)
            }
        }
        return out
    }

    /// Bytes read from the stream at time `now` (any amount: a part of a frame, several frames).
    /// Junk and damaged frames tell the machine that something not speaking the protocol is there.
    public mutating func received(bytes: some Collection<UInt8>, now: Double) -> [StreamLinkAction] {
        guard !bytes.isEmpty else { return [] }
        bytesReceived += bytes.count
        lastBytesAt = now
        return deliver(decoder.push(bytes), now: now)
    }

    /// Time passes: the machine's deadlines, and a partial frame the stream stopped sending.
    public mutating func tick(now: Double) -> [StreamLinkAction] {
        var out: [StreamLinkAction] = []
        if decoder.isAwaitingFrame && now - lastBytesAt >= stallTimeout {
            out += deliver(decoder.resynchronize(), now: now)
            lastBytesAt = now
        }
        out += perform(machine.tick(now: now))
        return out
    }

    /// The writes so far have left (the transport's queue drained).
    public mutating func transmitted(now: Double) -> [StreamLinkAction] {
        perform(machine.transmitted(now: now))
    }

    /// A new connection starts on the same station: bytes of the old one still held are dropped.
    public mutating func resetStream() {
        decoder.reset()
        damageSeen = decoder.junkBytes + decoder.badFrames
    }

    private mutating func deliver(_ frames: [LinkFrame], now: Double) -> [StreamLinkAction] {
        let damage = decoder.junkBytes + decoder.badFrames
        if damage > damageSeen {
            damageSeen = damage
            machine.heardSignal()
        }
        var out: [StreamLinkAction] = []
        for f in frames { out += perform(machine.receive(f, now: now)) }
        return out
    }
}
