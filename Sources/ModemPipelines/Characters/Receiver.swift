import ModemAudio
import ModemCodecs
import ModemDSP
import Synchronization
import ModemRuntime

/// Something the receiver noticed besides data, for diagnostics.
public enum ReceiverEvent: Sendable {
    /// A carrier appeared at this time (seconds from the start of the input).
    case carrier(seconds: Double)
    /// The carrier went away; statistics of the burst.
    case noCarrier(seconds: Double, ReceiverBurst)
}

/// Statistics of one carrier burst.
public struct ReceiverBurst: Sendable {
    /// Characters received (for Baudot, shift codes included).
    public var characters: Int
    /// Characters whose stop bit was wrong.
    public var framingErrors: Int
    /// Characters whose parity bit was wrong (they are still delivered).
    public var parityErrors: Int
    /// Mean confidence of the characters, 0...1.
    public var confidence: Float
    /// The baud rate measured from the signal.
    public var measuredBaudRate: Double
    /// Signal level, dBFS.
    public var levelDBFS: Float
}

/// Totals of a whole reception.
public struct ReceiverSummary: Sendable {
    /// Bytes delivered.
    public var bytes = 0
    /// Carrier bursts seen.
    public var bursts = 0
    /// Characters with a bad stop bit.
    public var framingErrors = 0
    /// Characters with a bad parity bit.
    public var parityErrors = 0
    /// Samples read from the source.
    public var samples = 0
    /// Threads the decoding used.
    public var threads = 1
}

/// Reads audio from an ``AudioSource``, demodulates it and delivers bytes as they are decoded.
///
/// Memory is bounded whatever the length of the input: the source is read in blocks and the
/// demodulator keeps a few characters of history.
public final class Receiver {
    /// The line settings.
    public let settings: ModemSettings
    /// Where samples come from.
    public let source: any AudioSource
    /// Samples read per block.
    public let blockSize: Int

    private var demodulator: FSKDemodulator

    /// Creates a receiver.
    /// - Parameters:
    ///   - settings: tones, baud, framing.
    ///   - source: the audio; its sample rate is used.
    ///   - blockSize: samples read per call to the source (256...1048576; default 32768).
    /// - Throws: ``ModemSettingsError`` when the settings do not fit the source's sample rate.
    public init(settings: ModemSettings, source: any AudioSource, blockSize: Int = 32768) throws {
        self.settings = settings
        self.source = source
        self.blockSize = max(256, min(1 << 20, blockSize))
        guard settings.framing.isAsynchronous else {
            throw ModemSettingsError("framing \(settings.framing) is synchronous: use PacketReceiver")
        }
        let config = try settings.configuration(sampleRate: source.sampleRate)
        demodulator = FSKDemodulator(configuration: config, shape: settings.framing.shape)
    }

    /// Runs until the source ends or `shouldStop` returns true (checked between blocks).
    /// - Parameters:
    ///   - shouldStop: polled between blocks; return true to stop early (the tail is still flushed).
    ///   - onBytes: receives decoded bytes, in order, as soon as they are known.
    ///   - onEvent: receives carrier diagnostics.
    ///   - onProgress: receives the number of samples read so far after each block.
    /// - Returns: totals of the reception.
    /// - Throws: ``AudioError`` when reading the source fails, or what `onBytes` throws.
    public func run(shouldStop: () -> Bool = { false },
                    onBytes: ([UInt8]) throws -> Void,
                    onEvent: (ReceiverEvent) -> Void = { _ in },
                    onProgress: (Int) -> Void = { _ in }) throws -> ReceiverSummary {
        var delivery = EventDelivery(settings: settings, sampleRate: Double(source.sampleRate))
        var block = [Float](repeating: 0, count: blockSize)
        var events: [FSKDemodulatorEvent] = []
        while !shouldStop() {
            let n = try block.withUnsafeMutableBufferPointer { try source.read(into: $0) }
            if n == 0 { break }
            delivery.summary.samples += n
            block.withUnsafeBufferPointer { demodulator.process(UnsafeBufferPointer(rebasing: $0[0..<n]), into: &events) }
            try delivery.deliver(events, onBytes: onBytes, onEvent: onEvent)
            events.removeAll(keepingCapacity: true)
            onProgress(delivery.summary.samples)
        }
        demodulator.finish(into: &events)
        try delivery.deliver(events, onBytes: onBytes, onEvent: onEvent)
        return delivery.summary
    }

    /// Decodes an audio file. A long, seekable file is split in two halves decoded on two threads
    /// and joined where both halves agree on several characters in a row (position and value);
    /// where they do not agree, the first half's decoder simply carries on to the end, so the
    /// output is always what one sequential pass would give for a continuous stream.
    /// - Parameters:
    ///   - path: the file.
    ///   - channel: the channel to decode, counted from 0.
    ///   - settings: tones, baud, framing.
    ///   - threads: 1 for a sequential pass, 2 (the default) to allow the split.
    ///   - shouldStop: polled between blocks.
    ///   - onBytes: receives decoded bytes in order.
    ///   - onEvent: receives carrier diagnostics (in the split case, the second half's after the join).
    ///   - onProgress: samples read so far (both halves).
    /// - Throws: ``AudioError`` for an unreadable file, ``ModemSettingsError`` for settings that do
    ///   not fit its sample rate.
    public static func decodeFile(path: String, channel: Int = 0, settings: ModemSettings, threads: Int = 2,
                                  shouldStop: () -> Bool = { false },
                                  onBytes: ([UInt8]) throws -> Void,
                                  onEvent: (ReceiverEvent) -> Void = { _ in },
                                  onProgress: (Int) -> Void = { _ in }) throws -> ReceiverSummary {
        guard settings.framing.isAsynchronous else {
            throw ModemSettingsError("framing \(settings.framing) is synchronous: use PacketReceiver")
        }
        return try decodeFile(reader: AudioFileReader(path: path, channel: channel), settings: settings, threads: threads,
                              shouldStop: shouldStop, onBytes: onBytes, onEvent: onEvent, onProgress: onProgress)
    }

    /// Decodes an audio file already opened (so a pipe or standard input is opened, and read, only
    /// once). As ``decodeFile(path:channel:settings:threads:shouldStop:onBytes:onEvent:onProgress:)``;
    /// the split onto two threads needs a seekable reader (the second half reopens `reader.path`).
    public static func decodeFile(reader: AudioFileReader, settings: ModemSettings, threads: Int = 2,
                                  shouldStop: () -> Bool = { false },
                                  onBytes: ([UInt8]) throws -> Void,
                                  onEvent: (ReceiverEvent) -> Void = { _ in },
                                  onProgress: (Int) -> Void = { _ in }) throws -> ReceiverSummary {
        guard settings.framing.isAsynchronous else {
            throw ModemSettingsError("framing \(settings.framing) is synchronous: use PacketReceiver")
        }
        let path = reader.path, channel = reader.channel
        let config = try settings.configuration(sampleRate: reader.sampleRate)
        let shape = settings.framing.shape
        let rate = Double(reader.sampleRate)
        let total = Int(reader.declaredFrameCount)
        let charSamples = config.samplesPerBit * shape.length
        let overlap = Int(max(2 * rate, 64 * charSamples))
        // Worth it only for long files; the second half's characters (16 bytes each) are held until
        // the join, so a file whose second half holds over a million characters stays on one thread.
        let split = threads >= 2 && reader.isSeekable && total >= Int(20 * rate) && total > 4 * overlap
            && Double(total) / charSamples < 2_000_000
        guard split else {
            return try Receiver(settings: settings, source: reader).run(
                shouldStop: shouldStop, onBytes: onBytes, onEvent: onEvent, onProgress: onProgress)
        }
        let mid = total / 2
        let second = SecondHalf()
        // The second half decodes on a thread of its own (the runtime's), joined below.
        let secondHalf = DedicatedThread.start(name: "modem-rx-second-half") {
            second.decode(path: path, channel: channel, from: mid, configuration: config, shape: shape)
        }

        var delivery = EventDelivery(settings: settings, sampleRate: rate)
        delivery.summary.threads = 2
        var demod = FSKDemodulator(configuration: config, shape: shape)
        var events: [FSKDemodulatorEvent] = []
        var pending: [FSKDemodulatorEvent] = []   // first-half events at or after `mid`
        var block = [Float](repeating: 0, count: 32768)
        var readA = 0
        let limit = mid + overlap
        var stopped = false
        while readA < limit {
            if shouldStop() { stopped = true; break }
            let want = min(block.count, limit - readA)
            let n = try block.withUnsafeMutableBufferPointer { try reader.read(into: UnsafeMutableBufferPointer(rebasing: $0[0..<want])) }
            if n == 0 { break }
            readA += n
            block.withUnsafeBufferPointer { demod.process(UnsafeBufferPointer(rebasing: $0[0..<n]), into: &events) }
            // Deliver what lies before the middle at once; hold the rest for the join.
            var now: [FSKDemodulatorEvent] = []
            for e in events {
                if pending.isEmpty && e.position < mid { now.append(e) } else { pending.append(e) }
            }
            events.removeAll(keepingCapacity: true)
            delivery.summary.samples = readA
            try delivery.deliver(now, onBytes: onBytes, onEvent: onEvent)
            onProgress(readA + second.samplesRead.load(ordering: .relaxed))
        }
        if stopped { second.stop.store(true, ordering: .relaxed) }
        secondHalf.join()
        if let error = second.error { throw error }

        if !stopped, readA == limit, let join = Self.joinPoint(first: pending, second: second.characters,
                                                                after: mid + Int(8 * charSamples),
                                                                tolerance: config.samplesPerBit / 2) {
            // The first half's copy of the joining character may start a sample or so earlier.
            let cut = join.position - Int(config.samplesPerBit / 2)
            let head = pending.filter {
                if case .character = $0 { return $0.position < cut }
                return $0.position <= join.position
            }
            try delivery.deliver(head, onBytes: onBytes, onEvent: onEvent)
            try second.forEachBatch(from: join.index) { try delivery.deliver($0, onBytes: onBytes, onEvent: onEvent) }
            delivery.summary.samples = total
            onProgress(total)
            return delivery.summary
        }
        // No agreement (or a stop): the first half's decoder carries on alone.
        try delivery.deliver(pending, onBytes: onBytes, onEvent: onEvent)
        while !stopped {
            if shouldStop() { break }
            let n = try block.withUnsafeMutableBufferPointer { try reader.read(into: $0) }
            if n == 0 { break }
            readA += n
            block.withUnsafeBufferPointer { demod.process(UnsafeBufferPointer(rebasing: $0[0..<n]), into: &events) }
            delivery.summary.samples = readA
            try delivery.deliver(events, onBytes: onBytes, onEvent: onEvent)
            events.removeAll(keepingCapacity: true)
            onProgress(readA)
        }
        demod.finish(into: &events)
        try delivery.deliver(events, onBytes: onBytes, onEvent: onEvent)
        return delivery.summary
    }

    /// The first character of the second half, at or after `after`, from which four characters in a
    /// row match the first half's in start (within `tolerance` samples) and bits.
    static func joinPoint(first: [FSKDemodulatorEvent], second: [CompactCharacter], after: Int,
                          tolerance: Double) -> (index: Int, position: Int)? {
        let a: [DemodulatedCharacter] = first.compactMap { if case .character(let c) = $0 { return c } else { return nil } }
        guard !a.isEmpty else { return nil }
        let run = 4
        var j = 0
        var i = 0
        while i + run <= second.count {
            let b = second[i]
            if b.start < after { i += 1; continue }
            if b.start > a[a.count - 1].startSample { return nil }
            while j < a.count && Double(a[j].startSample) < Double(b.start) - tolerance { j += 1 }
            var ok = j + run <= a.count
            var k = 0
            while ok && k < run {
                let x = a[j + k], y = second[i + k]
                ok = abs(Double(x.startSample - y.start)) <= tolerance && x.bits == y.bits
                k += 1
            }
            if ok { return (i, b.start) }
            i += 1
        }
        return nil
    }
}

/// A character as the second-half decoder keeps it (16 bytes: a long file has many).
struct CompactCharacter {
    var start: Int
    var bits: UInt32
    var stopBitOK: Bool
}

/// The decoder of a file's second half, run on another thread.
final class SecondHalf: @unchecked Sendable {
    // Written only by the decoding thread before the group is left; read after `wait()`.
    var characters: [CompactCharacter] = []
    /// Carrier events with the index of the character they precede.
    var carrierEvents: [(before: Int, event: FSKDemodulatorEvent)] = []
    var error: (any Error)?
    let samplesRead = Atomic<Int>(0)
    let stop = Atomic<Bool>(false)

    func decode(path: String, channel: Int, from start: Int, configuration: FSKConfiguration, shape: AsyncCharacterShape) {
        do {
            let reader = try AudioFileReader(path: path, channel: channel)
            try reader.seek(toFrame: Int64(start))
            var demod = FSKDemodulator(configuration: configuration, shape: shape)
            var events: [FSKDemodulatorEvent] = []
            var block = [Float](repeating: 0, count: 32768)
            var read = 0
            while !stop.load(ordering: .relaxed) {
                let n = try block.withUnsafeMutableBufferPointer { try reader.read(into: $0) }
                if n == 0 { break }
                read += n
                samplesRead.store(read, ordering: .relaxed)
                block.withUnsafeBufferPointer { demod.process(UnsafeBufferPointer(rebasing: $0[0..<n]), into: &events) }
                keep(events, offset: start)
                events.removeAll(keepingCapacity: true)
            }
            demod.finish(into: &events)
            keep(events, offset: start)
        } catch {
            self.error = error
        }
    }

    private func keep(_ events: [FSKDemodulatorEvent], offset: Int) {
        for e in events {
            switch e {
            case .character(let c):
                characters.append(CompactCharacter(start: c.startSample + offset, bits: c.bits, stopBitOK: c.stopBitOK))
            case .carrierDetected(let s):
                carrierEvents.append((characters.count, .carrierDetected(sample: s + offset)))
            case .carrierLost(var st):
                st.startSample += offset
                st.endSample += offset
                carrierEvents.append((characters.count, .carrierLost(st)))
            }
        }
    }

    /// Events from character `index` on, in order and in batches (so they are never all expanded at
    /// once), with carrier events before that index dropped.
    func forEachBatch(from index: Int, _ body: ([FSKDemodulatorEvent]) throws -> Void) throws {
        var out: [FSKDemodulatorEvent] = []
        out.reserveCapacity(4096)
        var k = carrierEvents.firstIndex { $0.before > index } ?? carrierEvents.count
        for i in index..<characters.count {
            while k < carrierEvents.count && carrierEvents[k].before <= i {
                out.append(carrierEvents[k].event)
                k += 1
            }
            let c = characters[i]
            // Per-character confidence is not kept for the second half (the burst statistics have it).
            out.append(.character(DemodulatedCharacter(bits: c.bits, stopBitOK: c.stopBitOK, confidence: 0, startSample: c.start)))
            if out.count >= 4096 {
                try body(out)
                out.removeAll(keepingCapacity: true)
            }
        }
        while k < carrierEvents.count { out.append(carrierEvents[k].event); k += 1 }
        try body(out)
    }
}

extension FSKDemodulatorEvent {
    /// The sample position the event refers to.
    var position: Int {
        switch self {
        case .character(let c): return c.startSample
        case .carrierDetected(let s): return s
        case .carrierLost(let st): return st.endSample
        }
    }
}

/// Turns demodulator events into bytes (UART or Baudot) and diagnostics, in order.
struct EventDelivery {
    let settings: ModemSettings
    let sampleRate: Double
    private let uart: UARTDecoder?
    private var baudot = BaudotDecoder()
    private var burst = ReceiverBurst(characters: 0, framingErrors: 0, parityErrors: 0, confidence: 0, measuredBaudRate: 0, levelDBFS: 0)
    var summary = ReceiverSummary()
    private var bytes: [UInt8] = []

    init(settings: ModemSettings, sampleRate: Double) {
        self.settings = settings
        self.sampleRate = sampleRate
        if case .uart(let f) = settings.framing { uart = UARTDecoder(framing: f) } else { uart = nil }
    }

    mutating func deliver(_ events: [FSKDemodulatorEvent], onBytes: ([UInt8]) throws -> Void,
                          onEvent: (ReceiverEvent) -> Void) throws {
        for e in events {
            switch e {
            case .character(let c):
                if let b = decode(c) { bytes.append(b) }
            case .carrierDetected(let s):
                try flush(onBytes)
                baudot.reset()
                burst = ReceiverBurst(characters: 0, framingErrors: 0, parityErrors: 0, confidence: 0, measuredBaudRate: 0, levelDBFS: 0)
                summary.bursts += 1
                onEvent(.carrier(seconds: Double(s) / sampleRate))
            case .carrierLost(let st):
                try flush(onBytes)
                burst.confidence = st.meanConfidence
                burst.measuredBaudRate = st.measuredBaudRate
                burst.levelDBFS = st.levelDBFS
                onEvent(.noCarrier(seconds: Double(st.endSample) / sampleRate, burst))
            }
        }
        try flush(onBytes)
    }

    private mutating func flush(_ onBytes: ([UInt8]) throws -> Void) throws {
        guard !bytes.isEmpty else { return }
        try onBytes(bytes)
        summary.bytes += bytes.count
        bytes.removeAll(keepingCapacity: true)
    }

    private mutating func decode(_ c: DemodulatedCharacter) -> UInt8? {
        burst.characters += 1
        if !c.stopBitOK { burst.framingErrors += 1; summary.framingErrors += 1 }
        if let uart {
            let ch = uart.decode(dataAndParity: c.bits, stopBit: c.stopBitOK)
            if !ch.parityOK { burst.parityErrors += 1; summary.parityErrors += 1 }
            return ch.byte
        }
        return baudot.decode(UInt8(c.bits & 0x1F))
    }
}
