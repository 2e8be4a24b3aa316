/// Turnarounds on a two-way line, measured from the audio the two ends play: the time from the last
/// sample of one end's frames to the first sample of the other end's answer, in channel time.
///
/// Each end's frames are the spans its modem marks as carrying frames (an AFSK frame; an OFDM
/// symbol that carries bits of a block with frames in it). Spans that follow each other without a
/// gap are one run. When an end begins a run after the other end's last run ended, and the other
/// end's frames came after its own last ones (it is answering, not talking on), the gap is one
/// turnaround. An answer from an end that was not transmitting when the other end's frames went
/// (it opens a transmission: a start of preamble and training comes first) is counted apart from
/// one that went out in a transmission that was still open.
///
/// The times are when the samples are played; the line's own delay (its filters, a few samples)
/// is not taken off, so a turnaround is if anything a little longer than the one heard.
public struct TurnaroundMeter: Sendable {
    /// Turnarounds whose answer went out in a transmission that was still open, in seconds.
    public private(set) var open: [Double] = []
    /// Turnarounds whose answer opened a transmission (its start included), in seconds.
    public private(set) var opening: [Double] = []
    /// Seconds of frame-carrying audio each end played (phone, device).
    public private(set) var frameSeconds = (phone: 0.0, device: 0.0)

    private struct End: Sendable {
        /// Where the last span ended, in this end's samples (nil: none yet).
        var lastEnd: Int?
        /// The same in channel seconds.
        var lastEndTime = -Double.infinity
        /// Whether this end was transmitting in the block in which the other end's frames last went.
        var openWhenAsked = false
    }
    private var ends = [End(), End()]

    /// An empty meter.
    public init() {}

    /// One block of both ends' output (``BlockSpans``).
    public mutating func note(phone: BlockSpans, device: BlockSpans) {
        struct Event { var end: Int; var start: Double; var stop: Double; var absolute: Range<Int> }
        let transmitting = [phone.wasTransmitting, device.wasTransmitting]
        var events: [Event] = []
        for (i, b) in [phone, device].enumerated() where b.count > 0 {
            let seconds = b.endTime - b.startTime
            for s in b.spans where !s.isEmpty {
                events.append(Event(end: i,
                                    start: b.startTime + seconds * Double(s.lowerBound) / Double(b.count),
                                    stop: b.startTime + seconds * Double(s.upperBound) / Double(b.count),
                                    absolute: (b.firstSample + s.lowerBound)..<(b.firstSample + s.upperBound)))
            }
        }
        // In time order; a run going on (starting where the end's last span ended) before a new one.
        events.sort { $0.start != $1.start ? $0.start < $1.start : (ends[$0.end].lastEnd == $0.absolute.lowerBound) }
        for e in events {
            let other = ends[1 - e.end]
            if ends[e.end].lastEnd != e.absolute.lowerBound,
               other.lastEnd != nil, other.lastEndTime <= e.start, other.lastEndTime > ends[e.end].lastEndTime {
                let gap = e.start - other.lastEndTime
                if ends[e.end].openWhenAsked { open.append(gap) } else { opening.append(gap) }
            }
            // The other end is asked now: was its transmission open?
            ends[1 - e.end].openWhenAsked = transmitting[1 - e.end]
            ends[e.end].lastEnd = e.absolute.upperBound
            ends[e.end].lastEndTime = max(ends[e.end].lastEndTime, e.stop)
            if e.end == 0 { frameSeconds.phone += e.stop - e.start } else { frameSeconds.device += e.stop - e.start }
        }
    }

    /// One end's block for ``note(phone:device:)``.
    public struct BlockSpans: Sendable {
        /// The frame spans, relative to the block.
        public var spans: [Range<Int>]
        /// The block's first sample on this end's clock.
        public var firstSample: Int
        /// Samples in the block.
        public var count: Int
        /// The block's start and end in channel seconds.
        public var startTime: Double
        public var endTime: Double
        /// Whether the end's modem was transmitting at the block's start (a transmission was open).
        public var wasTransmitting: Bool

        /// Creates a block's record.
        public init(spans: [Range<Int>], firstSample: Int, count: Int, startTime: Double, endTime: Double, wasTransmitting: Bool) {
            self.spans = spans
            self.firstSample = firstSample
            self.count = count
            self.startTime = startTime
            self.endTime = endTime
            self.wasTransmitting = wasTransmitting
        }
    }

    /// Count, minimum, median and maximum of some turnarounds (zeros when there are none).
    public static func summary(_ values: [Double]) -> Summary {
        guard !values.isEmpty else { return Summary() }
        let s = values.sorted()
        let median = s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
        return Summary(count: s.count, minimum: s.first!, median: median, maximum: s.last!)
    }

    /// Count, minimum, median and maximum in seconds.
    public struct Summary: Sendable, Equatable {
        public var count = 0
        public var minimum = 0.0
        public var median = 0.0
        public var maximum = 0.0

        /// A summary of `count` turnarounds (default: none).
        public init(count: Int = 0, minimum: Double = 0, median: Double = 0, maximum: Double = 0) {
            self.count = count
            self.minimum = minimum
            self.median = median
            self.maximum = maximum
        }
    }
}
