/// The 13 bytes of an IL2P header (before scrambling and its two Reed-Solomon check bytes).
///
/// Layout (IL2P specification 0.4, as Dire Wolf 1.7+ and the NinoTNC send it):
/// - bytes 0-5 and 6-11, bits 5-0: the destination's and the source's callsign in DEC SIXBIT
///   (ASCII minus 0x20; trailing spaces are 0), used by type 1 headers only;
/// - bit 6: byte 0 the UI flag, bytes 1-4 a 4-bit PID code, bytes 5-11 a 7-bit control code (most
///   significant bit in the lowest byte);
/// - bit 7: byte 0 the FEC level (1: 16 check bytes per payload block), byte 1 the header type,
///   bytes 2-11 the 10-bit payload byte count;
/// - byte 12: the destination's SSID in the high nibble, the source's in the low one.
///
/// A type 1 header carries two addresses, the frame type and the PID compressed, and the payload is the
/// AX.25 information field; a type 0 header carries only the FEC level and the count, and the payload
/// is the whole AX.25 frame. ``IL2PFrameMapping`` converts between AX.25 frames and header plus payload.
public struct IL2PHeader: Sendable, Hashable {
    /// Bytes in a header, without its check bytes.
    public static let byteCount = 13
    /// Reed-Solomon check bytes after it.
    public static let parityCount = 2
    /// The largest payload a header can announce (10 bits).
    public static let maximumPayloadCount = 1023

    /// Type 1 (compressed AX.25 header) or type 0 (transparent).
    public var isType1: Bool
    /// The FEC level bit: true for 16 check bytes per payload block ("max FEC"), false for 2-8 by size.
    public var maximumFEC: Bool
    /// Payload bytes (before blocking and coding), 0...1023.
    public var payloadCount: Int
    /// Type 1: the destination callsign in SIXBIT (6 codes, 0...63 each, trailing spaces 0).
    public var destination: [UInt8]
    /// Type 1: the source callsign in SIXBIT.
    public var source: [UInt8]
    /// Type 1: the destination's SSID, 0...15.
    public var destinationSSID: Int
    /// Type 1: the source's SSID, 0...15.
    public var sourceSSID: Int
    /// Type 1: set for UI frames.
    public var ui: Bool
    /// Type 1: the PID code, 0...15 (0: an S frame, 1: a U frame other than UI, others: I and UI PIDs).
    public var pid: Int
    /// Type 1: the control code, 0...127.
    public var control: Int

    /// A header with every field zero but those given (type 0 unless `isType1`).
    public init(isType1: Bool = false, maximumFEC: Bool, payloadCount: Int, destination: [UInt8] = [0, 0, 0, 0, 0, 0],
                source: [UInt8] = [0, 0, 0, 0, 0, 0], destinationSSID: Int = 0, sourceSSID: Int = 0,
                ui: Bool = false, pid: Int = 0, control: Int = 0) {
        precondition((0...Self.maximumPayloadCount).contains(payloadCount), "IL2PHeader payloadCount must be 0...1023, got \(payloadCount)")
        precondition(destination.count == 6 && source.count == 6 && (destination + source).allSatisfy { $0 < 64 },
                     "IL2PHeader callsigns are 6 SIXBIT codes each")
        precondition((0...15).contains(destinationSSID) && (0...15).contains(sourceSSID), "IL2PHeader SSIDs are 0...15")
        precondition((0...15).contains(pid) && (0...127).contains(control), "IL2PHeader pid is 0...15 and control 0...127")
        self.isType1 = isType1
        self.maximumFEC = maximumFEC
        self.payloadCount = payloadCount
        self.destination = destination
        self.source = source
        self.destinationSSID = destinationSSID
        self.sourceSSID = sourceSSID
        self.ui = ui
        self.pid = pid
        self.control = control
    }

    /// Reads the fields of 13 header bytes (descrambled and corrected).
    public init(bytes: some Collection<UInt8>) {
        let h = Array(bytes)
        precondition(h.count == Self.byteCount, "IL2PHeader needs 13 bytes, got \(h.count)")
        // A field of `width` bits at bit `bit` of bytes first..<first+width, most significant first.
        func field(bit: Int, first: Int, width: Int) -> Int {
            (first..<(first + width)).reduce(0) { $0 << 1 | Int(h[$1] >> UInt8(bit) & 1) }
        }
        isType1 = field(bit: 7, first: 1, width: 1) == 1
        maximumFEC = field(bit: 7, first: 0, width: 1) == 1
        payloadCount = field(bit: 7, first: 2, width: 10)
        destination = h[0..<6].map { $0 & 0x3F }
        source = h[6..<12].map { $0 & 0x3F }
        destinationSSID = Int(h[12] >> 4)
        sourceSSID = Int(h[12] & 0x0F)
        ui = field(bit: 6, first: 0, width: 1) == 1
        pid = field(bit: 6, first: 1, width: 4)
        control = field(bit: 6, first: 5, width: 7)
    }

    /// The 13 bytes (before scrambling).
    public var bytes: [UInt8] {
        var h = [UInt8](repeating: 0, count: Self.byteCount)
        func put(_ value: Int, bit: Int, first: Int, width: Int) {
            for k in 0..<width where value >> (width - 1 - k) & 1 == 1 { h[first + k] |= 1 << UInt8(bit) }
        }
        for i in 0..<6 {
            h[i] = destination[i]
            h[6 + i] = source[i]
        }
        put(maximumFEC ? 1 : 0, bit: 7, first: 0, width: 1)
        put(isType1 ? 1 : 0, bit: 7, first: 1, width: 1)
        put(payloadCount, bit: 7, first: 2, width: 10)
        put(ui ? 1 : 0, bit: 6, first: 0, width: 1)
        put(pid, bit: 6, first: 1, width: 4)
        put(control, bit: 6, first: 5, width: 7)
        h[12] = UInt8(destinationSSID << 4 | sourceSSID)
        return h
    }

    /// The payload's blocks for this header's count and FEC level.
    public var payloadLayout: IL2PPayloadLayout {
        IL2PPayloadLayout(payloadCount: payloadCount, maximumFEC: maximumFEC)
    }
}
