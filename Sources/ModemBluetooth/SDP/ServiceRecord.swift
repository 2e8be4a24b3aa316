/// One SDP service record (Core Vol 3 Part B §2.2): attributes by ID, listed in ascending ID order.
public struct ServiceRecord: Sendable, Hashable {
    /// The attributes, by attribute ID.
    public var attributes: [UInt16: DataElement]

    /// Attribute IDs (§5.1; Assigned Numbers).
    public enum Attribute {
        /// ServiceRecordHandle, uint32.
        public static let serviceRecordHandle: UInt16 = 0x0000
        /// ServiceClassIDList, DES of UUIDs.
        public static let serviceClassIDList: UInt16 = 0x0001
        /// ProtocolDescriptorList, DES of protocol DESs (or a DEA of such).
        public static let protocolDescriptorList: UInt16 = 0x0004
        /// BrowseGroupList, DES of UUIDs.
        public static let browseGroupList: UInt16 = 0x0005
        /// LanguageBaseAttributeIDList, DES of (language, encoding, base) triples.
        public static let languageBaseAttributeIDList: UInt16 = 0x0006
        /// BluetoothProfileDescriptorList, DES of (UUID, version) DESs.
        public static let profileDescriptorList: UInt16 = 0x0009
        /// ServiceName at the primary language base 0x0100.
        public static let serviceName: UInt16 = 0x0100
    }

    /// 16-bit UUID aliases used by the Serial Port record (Assigned Numbers).
    public enum UUID16 {
        /// The SDP protocol.
        public static let sdp: UInt16 = 0x0001
        /// The RFCOMM protocol.
        public static let rfcomm: UInt16 = 0x0003
        /// The L2CAP protocol.
        public static let l2cap: UInt16 = 0x0100
        /// PublicBrowseRoot (browse group).
        public static let publicBrowseRoot: UInt16 = 0x1002
        /// SerialPort (service class and profile).
        public static let serialPort: UInt16 = 0x1101
    }

    /// A record with `attributes`.
    public init(attributes: [UInt16: DataElement]) {
        self.attributes = attributes
    }

    /// The ServiceRecordHandle attribute, when it is a uint32.
    public var handle: UInt32? {
        if case .uint32(let handle)? = attributes[Attribute.serviceRecordHandle] { return handle }
        return nil
    }

    /// The Serial Port Profile record: handle, class {0x1101}, protocols {{L2CAP}, {RFCOMM, channel}},
    /// browse group {PublicBrowseRoot}, language base {"en", UTF-8, 0x0100}, profile {{0x1101, 1.2}}, name.
    public static func serialPort(channel: UInt8, name: String, handle: UInt32 = 0x0001_0000) -> ServiceRecord {
        ServiceRecord(attributes: [
            Attribute.serviceRecordHandle: .uint32(handle),
            Attribute.serviceClassIDList: .sequence([.uuid16(UUID16.serialPort)]),
            Attribute.protocolDescriptorList: .sequence([
                .sequence([.uuid16(UUID16.l2cap)]),
                .sequence([.uuid16(UUID16.rfcomm), .uint8(channel)]),
            ]),
            Attribute.browseGroupList: .sequence([.uuid16(UUID16.publicBrowseRoot)]),
            Attribute.languageBaseAttributeIDList: .sequence([.uint16(0x656E), .uint16(0x006A), .uint16(0x0100)]),
            Attribute.profileDescriptorList: .sequence([.sequence([.uuid16(UUID16.serialPort), .uint16(0x0102)])]),
            Attribute.serviceName: .string(name),
        ])
    }

    /// True when some attribute value holds `uuid` (128-bit form), at any depth (§2.5.2 search).
    public func contains(uuid: UInt128) -> Bool {
        attributes.values.contains { $0.contains(uuid: uuid) }
    }

    /// The attribute list for the IDs in `ranges`: a DES of (uint16 ID, value) pairs, ascending.
    public func attributeList(_ ranges: [ClosedRange<UInt16>]) -> DataElement {
        let ids = attributes.keys.filter { id in ranges.contains { $0.contains(id) } }.sorted()
        return .sequence(ids.flatMap { [DataElement.uint16($0), attributes[$0]!] })
    }

    /// Reads an attribute list (a DES of ID, value pairs) back into a record; throws on any other shape.
    public init(attributeList: DataElement) throws(MalformedPacket) {
        guard case .sequence(let items) = attributeList, items.count % 2 == 0 else {
            throw MalformedPacket("SDP attribute list: not a sequence of ID, value pairs")
        }
        var attributes: [UInt16: DataElement] = [:]
        for pair in stride(from: 0, to: items.count, by: 2) {
            guard case .uint16(let id) = items[pair] else {
                throw MalformedPacket("SDP attribute list: attribute ID \(items[pair]) is not a uint16")
            }
            attributes[id] = items[pair + 1]
        }
        self.attributes = attributes
    }

    /// The first RFCOMM server channel (1-30) in the ProtocolDescriptorList: a protocol DES whose first
    /// element is the RFCOMM UUID and whose second an unsigned integer 1-30. Alternatives (several
    /// protocol stacks) are searched in order.
    public var rfcommChannel: UInt8? {
        guard let list = attributes[Attribute.protocolDescriptorList] else { return nil }
        return Self.rfcommChannel(in: list)
    }

    static func rfcommChannel(in list: DataElement) -> UInt8? {
        switch list {
        case .alternative(let stacks):
            return stacks.lazy.compactMap { rfcommChannel(in: $0) }.first
        case .sequence(let protocols):
            for descriptor in protocols {
                guard case .sequence(let fields) = descriptor, fields.count >= 2,
                      fields[0].uuid == DataElement.uuid(UUID16.rfcomm),
                      let channel = fields[1].unsignedValue, (1...30).contains(channel) else { continue }
                return UInt8(channel)
            }
            return nil
        default:
            return nil
        }
    }
}
