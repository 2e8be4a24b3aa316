/// The kernel's HCI ioctl request numbers (Linux `hci_sock.h`: `_IOR('H', nr, int)` =
/// direction read (2) << 30 | sizeof(int) (4) << 16 | 'H' (0x48) << 8 | nr).
public enum BlueZIoctl {
    /// `_IOR(type, nr, size)` as `asm-generic/ioctl.h` builds it.
    static func read(type: UInt8, number: UInt8, size: UInt) -> UInt {
        (2 << 30) | (size << 16) | (UInt(type) << 8) | UInt(number)
    }

    /// `HCIGETDEVINFO` = `_IOR('H', 211, int)`: an adapter's `struct hci_dev_info`.
    public static let getDeviceInfo = read(type: UInt8(ascii: "H"), number: 211, size: 4)
    /// `HCIINQUIRY` = `_IOR('H', 240, int)`: the kernel runs an inquiry and returns `inquiry_info` records.
    public static let inquiry = read(type: UInt8(ascii: "H"), number: 240, size: 4)
}

/// An adapter as `HCIGETDEVINFO` describes it (`struct hci_dev_info`, 92 bytes, host byte order).
public struct BlueZAdapterInfo: Sendable, Hashable {
    /// The size of `struct hci_dev_info`.
    public static let size = 92
    /// The adapter's index (hci0 = 0).
    public var device: UInt16
    /// Its kernel name ("hci0").
    public var name: String
    /// Its address.
    public var address: BDAddress
    /// The kernel's flags word (bit 0 `HCI_UP`, bit 2 `HCI_RUNNING`, ...).
    public var flags: UInt32
    /// The controller's ACL buffers: bytes per packet and how many.
    public var aclMTU: UInt16
    /// How many ACL packets the controller holds.
    public var aclPackets: UInt16

    /// Whether the adapter is up (`HCI_UP`, bit 0 of the flags): `hciconfig hci0 up` or bluetoothd powered it.
    public var isUp: Bool { flags & 1 != 0 }

    /// The ioctl's buffer: `dev_id` set, the rest zero.
    static func request(device: UInt16) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: size)
        withUnsafeBytes(of: device) { bytes.replaceSubrange(0..<2, with: $0) }
        return bytes
    }

    /// Reads the structure: `u16 dev_id; char name[8]; bdaddr_t bdaddr; u32 flags` (at 16); `u8 type;
    /// u8 features[8]; u32 pkt_type` (at 32), `link_policy, link_mode; u16 acl_mtu` (at 44), `acl_pkts`,
    /// `sco_mtu, sco_pkts; struct hci_dev_stats` (10 × u32). Host byte order (little-endian here).
    public init(parsing bytes: [UInt8]) throws(MalformedPacket) {
        guard bytes.count >= Self.size else { throw MalformedPacket("hci_dev_info of \(bytes.count) bytes, expected \(Self.size)") }
        var r = ByteReader(bytes, context: "hci_dev_info")
        device = try r.u16le("dev_id")
        let rawName = try r.bytes(8, "name")
        name = String(decoding: rawName.prefix { $0 != 0 }, as: UTF8.self)
        address = try r.address("bdaddr")
        flags = try r.u32le("flags")
        var tail = ByteReader(bytes, offset: 44, context: "hci_dev_info")
        aclMTU = try tail.u16le("acl_mtu")
        aclPackets = try tail.u16le("acl_pkts")
    }
}

/// The `HCIINQUIRY` ioctl's buffer: `struct hci_inquiry_req` (10 bytes: `u16 dev_id; u16 flags;
/// u8 lap[3]; u8 length; u8 num_rsp;` and a pad byte) followed by room for `num_rsp` packed
/// `struct inquiry_info` records (14 bytes: `bdaddr_t bdaddr; u8 pscan_rep_mode, pscan_period_mode,
/// pscan_mode; u8 dev_class[3]; __le16 clock_offset`), which the kernel fills in and counts in `num_rsp`.
public enum BlueZInquiry {
    /// `sizeof(struct hci_inquiry_req)`.
    public static let requestSize = 10
    /// `sizeof(struct inquiry_info)`.
    public static let recordSize = 14
    /// `IREQ_CACHE_FLUSH`: forget earlier results, report only what answers now.
    public static let flushCache: UInt16 = 0x0001
    /// The most records one inquiry returns (`num_rsp` is a byte).
    public static let maximumResponses = 255

    /// The inquiry length for `seconds`, in the controller's 1.28 s units (1...48: the kernel refuses more than 60 s).
    public static func length(seconds: Double) -> UInt8 {
        let units = (seconds / 1.28).rounded(.up)
        return UInt8(min(48, max(1, units.isFinite ? units : 1)))
    }

    /// The buffer for adapter `device`: the general inquiry access code (LAP 0x9E8B33, least
    /// significant byte first), cache flushed, up to 255 responses, room for all of them.
    public static func request(device: UInt16, seconds: Double) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: requestSize + maximumResponses * recordSize)
        withUnsafeBytes(of: device) { bytes.replaceSubrange(0..<2, with: $0) }
        withUnsafeBytes(of: flushCache) { bytes.replaceSubrange(2..<4, with: $0) }
        bytes.replaceSubrange(4..<7, with: [0x33, 0x8B, 0x9E])
        bytes[7] = length(seconds: seconds)
        bytes[8] = UInt8(maximumResponses)
        return bytes
    }

    /// The records the kernel wrote after the request (as many as its `num_rsp` says, at most as
    /// many as the buffer holds: a count larger than the buffer is malformed).
    public static func responses(in buffer: [UInt8]) throws(MalformedPacket) -> [HCIInquiryResponse] {
        guard buffer.count >= requestSize else { throw MalformedPacket("inquiry buffer of \(buffer.count) bytes") }
        let count = Int(buffer[8])
        guard requestSize + count * recordSize <= buffer.count else {
            throw MalformedPacket("inquiry count \(count) overruns the \(buffer.count)-byte buffer")
        }
        var r = ByteReader(buffer, offset: requestSize, context: "inquiry_info")
        var found: [HCIInquiryResponse] = []
        for _ in 0..<count {
            let address = try r.address("bdaddr")
            let repetition = try r.u8("pscan_rep_mode")
            try r.skip(2)   // pscan_period_mode, pscan_mode
            let classOfDevice = try r.u24le("dev_class")
            let clockOffset = try r.u16le("clock_offset")
            guard !found.contains(where: { $0.address == address }) else { continue }
            found.append(HCIInquiryResponse(address: address, pageScanRepetitionMode: repetition,
                                            classOfDevice: classOfDevice, clockOffset: clockOffset))
        }
        return found
    }
}
