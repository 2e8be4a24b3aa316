/// One inquiry response (events 0x02, 0x22 and 0x2F, Core Vol 4 Part E §7.7.2, §7.7.33, §7.7.38).
public struct HCIInquiryResponse: Sendable, Hashable {
    /// The device's address.
    public var address: BDAddress
    /// Its page scan repetition mode (for Remote_Name_Request and Create_Connection).
    public var pageScanRepetitionMode: UInt8
    /// Its class of device (24 bits).
    public var classOfDevice: UInt32
    /// Its clock offset (bits 0-14; bit 15 is set by us when passing it back as valid).
    public var clockOffset: UInt16
    /// Received signal strength in dBm (events 0x22 and 0x2F only).
    public var rssi: Int8?
    /// Extended inquiry response data, 240 bytes (event 0x2F only).
    public var eir: [UInt8]?

    /// A response with the given fields.
    public init(address: BDAddress, pageScanRepetitionMode: UInt8 = 1, classOfDevice: UInt32 = 0,
                clockOffset: UInt16 = 0, rssi: Int8? = nil, eir: [UInt8]? = nil) {
        self.address = address
        self.pageScanRepetitionMode = pageScanRepetitionMode
        self.classOfDevice = classOfDevice
        self.clockOffset = clockOffset
        self.rssi = rssi
        self.eir = eir
    }
}

/// A handle and how many of its ACL packets the controller finished (Number Of Completed Packets).
public struct HCICompletedPackets: Sendable, Hashable {
    /// The connection handle.
    public var handle: UInt16
    /// Packets completed (sent or flushed) since the last report.
    public var count: UInt16
    /// A handle and count.
    public init(handle: UInt16, count: UInt16) {
        self.handle = handle
        self.count = count
    }
}

/// The HCI events the host stack understands (Core Vol 4 Part E §7.7), parsed from an event packet;
/// anything else is kept as ``other(code:parameters:)``. Parsing checks every length (a short event
/// throws `MalformedPacket`); extra trailing bytes are tolerated (later versions of the
/// specification append fields).
public enum HCIEvent: Sendable, Hashable {
    /// 0x01: inquiry ended.
    case inquiryComplete(status: UInt8)
    /// 0x02: standard inquiry results.
    case inquiryResult([HCIInquiryResponse])
    /// 0x03: a connection attempt ended (status 0 = connected).
    case connectionComplete(status: UInt8, handle: UInt16, address: BDAddress, linkType: UInt8, encryption: UInt8)
    /// 0x04: a device pages us; the host must accept or reject.
    case connectionRequest(address: BDAddress, classOfDevice: UInt32, linkType: UInt8)
    /// 0x05: a connection ended, with the reason.
    case disconnectionComplete(status: UInt8, handle: UInt16, reason: UInt8)
    /// 0x06: authentication on a connection ended.
    case authenticationComplete(status: UInt8, handle: UInt16)
    /// 0x07: the remote name (NUL-terminated UTF-8 in 248 bytes), or a failure status.
    case remoteNameRequestComplete(status: UInt8, address: BDAddress, name: String)
    /// 0x0E: a command finished; its return parameters (status first for most).
    case commandComplete(numCommands: UInt8, opcode: UInt16, returnParameters: [UInt8])
    /// 0x0F: a command was accepted (status 0) or refused; its result comes later.
    case commandStatus(status: UInt8, numCommands: UInt8, opcode: UInt16)
    /// 0x10: the controller failed.
    case hardwareError(code: UInt8)
    /// 0x13: ACL buffers freed, per handle.
    case numberOfCompletedPackets([HCICompletedPackets])
    /// 0x16: the peer wants PIN pairing.
    case pinCodeRequest(address: BDAddress)
    /// 0x17: the controller asks for a stored link key.
    case linkKeyRequest(address: BDAddress)
    /// 0x18: a new link key (16 bytes) and its type.
    case linkKeyNotification(address: BDAddress, key: [UInt8], keyType: UInt8)
    /// 0x22: inquiry results with RSSI.
    case inquiryResultWithRSSI([HCIInquiryResponse])
    /// 0x2F: one extended inquiry result (with RSSI and EIR data).
    case extendedInquiryResult(HCIInquiryResponse)
    /// 0x31: Secure Simple Pairing asks for our IO capability.
    case ioCapabilityRequest(address: BDAddress)
    /// 0x32: the peer's IO capability.
    case ioCapabilityResponse(address: BDAddress, ioCapability: UInt8, oobDataPresent: UInt8, authenticationRequirements: UInt8)
    /// 0x33: numeric comparison (just works: accept).
    case userConfirmationRequest(address: BDAddress, value: UInt32)
    /// 0x36: Secure Simple Pairing ended.
    case simplePairingComplete(status: UInt8, address: BDAddress)
    /// Any other event, kept whole.
    case other(code: UInt8, parameters: [UInt8])

    /// Event codes.
    public enum Code {
        /// Inquiry Complete.
        public static let inquiryComplete: UInt8 = 0x01
        /// Inquiry Result.
        public static let inquiryResult: UInt8 = 0x02
        /// Connection Complete.
        public static let connectionComplete: UInt8 = 0x03
        /// Connection Request.
        public static let connectionRequest: UInt8 = 0x04
        /// Disconnection Complete.
        public static let disconnectionComplete: UInt8 = 0x05
        /// Authentication Complete.
        public static let authenticationComplete: UInt8 = 0x06
        /// Remote Name Request Complete.
        public static let remoteNameRequestComplete: UInt8 = 0x07
        /// Command Complete.
        public static let commandComplete: UInt8 = 0x0E
        /// Command Status.
        public static let commandStatus: UInt8 = 0x0F
        /// Hardware Error.
        public static let hardwareError: UInt8 = 0x10
        /// Number Of Completed Packets.
        public static let numberOfCompletedPackets: UInt8 = 0x13
        /// PIN Code Request.
        public static let pinCodeRequest: UInt8 = 0x16
        /// Link Key Request.
        public static let linkKeyRequest: UInt8 = 0x17
        /// Link Key Notification.
        public static let linkKeyNotification: UInt8 = 0x18
        /// Inquiry Result with RSSI.
        public static let inquiryResultWithRSSI: UInt8 = 0x22
        /// Extended Inquiry Result.
        public static let extendedInquiryResult: UInt8 = 0x2F
        /// IO Capability Request.
        public static let ioCapabilityRequest: UInt8 = 0x31
        /// IO Capability Response.
        public static let ioCapabilityResponse: UInt8 = 0x32
        /// User Confirmation Request.
        public static let userConfirmationRequest: UInt8 = 0x33
        /// Simple Pairing Complete.
        public static let simplePairingComplete: UInt8 = 0x36
    }

    /// Parses an event packet's code and parameters.
    public init(code: UInt8, parameters: [UInt8]) throws(MalformedPacket) {
        var r = ByteReader(parameters, context: "HCI event \(HCIFormat.hex8(code))")
        switch code {
        case Code.inquiryComplete:
            self = .inquiryComplete(status: try r.u8("status"))
        case Code.inquiryResult, Code.inquiryResultWithRSSI:
            let count = Int(try r.u8("Num_Responses"))
            var responses: [HCIInquiryResponse] = []
            for _ in 0..<count {
                var response = HCIInquiryResponse(address: try r.address())
                response.pageScanRepetitionMode = try r.u8("Page_Scan_Repetition_Mode")
                try r.skip(code == Code.inquiryResult ? 2 : 1)
                response.classOfDevice = try r.u24le("Class_Of_Device")
                response.clockOffset = try r.u16le("Clock_Offset")
                if code == Code.inquiryResultWithRSSI { response.rssi = Int8(bitPattern: try r.u8("RSSI")) }
                responses.append(response)
            }
            self = code == Code.inquiryResult ? .inquiryResult(responses) : .inquiryResultWithRSSI(responses)
        case Code.extendedInquiryResult:
            let count = try r.u8("Num_Responses")
            guard count == 1 else { throw MalformedPacket("HCI event 0x2F: Num_Responses \(count), must be 1") }
            var response = HCIInquiryResponse(address: try r.address())
            response.pageScanRepetitionMode = try r.u8("Page_Scan_Repetition_Mode")
            try r.skip(1)
            response.classOfDevice = try r.u24le("Class_Of_Device")
            response.clockOffset = try r.u16le("Clock_Offset")
            response.rssi = Int8(bitPattern: try r.u8("RSSI"))
            response.eir = try r.bytes(min(240, r.remaining), "EIR")
            self = .extendedInquiryResult(response)
        case Code.connectionComplete:
            self = .connectionComplete(status: try r.u8("status"), handle: try r.u16le("handle") & 0x0FFF,
                                       address: try r.address(), linkType: try r.u8("Link_Type"),
                                       encryption: try r.u8("Encryption_Enabled"))
        case Code.connectionRequest:
            self = .connectionRequest(address: try r.address(), classOfDevice: try r.u24le("Class_Of_Device"),
                                      linkType: try r.u8("Link_Type"))
        case Code.disconnectionComplete:
            self = .disconnectionComplete(status: try r.u8("status"), handle: try r.u16le("handle") & 0x0FFF,
                                          reason: try r.u8("reason"))
        case Code.authenticationComplete:
            self = .authenticationComplete(status: try r.u8("status"), handle: try r.u16le("handle") & 0x0FFF)
        case Code.remoteNameRequestComplete:
            let status = try r.u8("status")
            let address = try r.address()
            let raw = r.rest().prefix(248)
            self = .remoteNameRequestComplete(status: status, address: address,
                                              name: String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self))
        case Code.commandComplete:
            self = .commandComplete(numCommands: try r.u8("Num_HCI_Command_Packets"), opcode: try r.u16le("opcode"),
                                    returnParameters: r.rest())
        case Code.commandStatus:
            self = .commandStatus(status: try r.u8("status"), numCommands: try r.u8("Num_HCI_Command_Packets"),
                                  opcode: try r.u16le("opcode"))
        case Code.hardwareError:
            self = .hardwareError(code: try r.u8("Hardware_Code"))
        case Code.numberOfCompletedPackets:
            let count = Int(try r.u8("Num_Handles"))
            // (handle, count) pairs, as controllers send them (BlueZ's hci_comp_pkts_info, Bumble).
            var entries: [HCICompletedPackets] = []
            for _ in 0..<count {
                entries.append(HCICompletedPackets(handle: try r.u16le("handle") & 0x0FFF, count: try r.u16le("count")))
            }
            self = .numberOfCompletedPackets(entries)
        case Code.pinCodeRequest:
            self = .pinCodeRequest(address: try r.address())
        case Code.linkKeyRequest:
            self = .linkKeyRequest(address: try r.address())
        case Code.linkKeyNotification:
            self = .linkKeyNotification(address: try r.address(), key: try r.bytes(16, "Link_Key"),
                                        keyType: try r.u8("Key_Type"))
        case Code.ioCapabilityRequest:
            self = .ioCapabilityRequest(address: try r.address())
        case Code.ioCapabilityResponse:
            self = .ioCapabilityResponse(address: try r.address(), ioCapability: try r.u8("IO_Capability"),
                                         oobDataPresent: try r.u8("OOB_Data_Present"),
                                         authenticationRequirements: try r.u8("Authentication_Requirements"))
        case Code.userConfirmationRequest:
            self = .userConfirmationRequest(address: try r.address(), value: try r.u32le("Numeric_Value"))
        case Code.simplePairingComplete:
            self = .simplePairingComplete(status: try r.u8("status"), address: try r.address())
        default:
            self = .other(code: code, parameters: parameters)
        }
    }

    /// Parses an event packet; nil for other kinds of packet.
    public init?(_ packet: HCIPacket) throws(MalformedPacket) {
        guard case let .event(code, parameters) = packet else { return nil }
        try self.init(code: code, parameters: parameters)
    }

    /// The event as a packet (what a controller sends; the tests' fake controller uses it).
    public var packet: HCIPacket {
        var p: [UInt8] = []
        let code: UInt8
        func response(_ r: HCIInquiryResponse, reserved: Int) {
            p.append(address: r.address)
            p.append(r.pageScanRepetitionMode)
            p.append(contentsOf: [UInt8](repeating: 0, count: reserved))
            p.appendLE24(r.classOfDevice)
            p.appendLE(r.clockOffset)
        }
        switch self {
        case let .inquiryComplete(status):
            code = Code.inquiryComplete; p = [status]
        case let .inquiryResult(responses):
            code = Code.inquiryResult
            p.append(UInt8(min(responses.count, 255)))
            for r in responses.prefix(255) { response(r, reserved: 2) }
        case let .inquiryResultWithRSSI(responses):
            code = Code.inquiryResultWithRSSI
            p.append(UInt8(min(responses.count, 255)))
            for r in responses.prefix(255) {
                response(r, reserved: 1)
                p.append(UInt8(bitPattern: r.rssi ?? 0))
            }
        case let .extendedInquiryResult(r):
            code = Code.extendedInquiryResult
            p.append(1)
            response(r, reserved: 1)
            p.append(UInt8(bitPattern: r.rssi ?? 0))
            let eir = (r.eir ?? []).prefix(240)
            p.append(contentsOf: eir)
            p.append(contentsOf: [UInt8](repeating: 0, count: 240 - eir.count))
        case let .connectionComplete(status, handle, address, linkType, encryption):
            code = Code.connectionComplete
            p.append(status); p.appendLE(handle); p.append(address: address); p.append(linkType); p.append(encryption)
        case let .connectionRequest(address, classOfDevice, linkType):
            code = Code.connectionRequest
            p.append(address: address); p.appendLE24(classOfDevice); p.append(linkType)
        case let .disconnectionComplete(status, handle, reason):
            code = Code.disconnectionComplete
            p.append(status); p.appendLE(handle); p.append(reason)
        case let .authenticationComplete(status, handle):
            code = Code.authenticationComplete
            p.append(status); p.appendLE(handle)
        case let .remoteNameRequestComplete(status, address, name):
            code = Code.remoteNameRequestComplete
            p.append(status); p.append(address: address)
            let bytes = HCICommand.utf8Prefix(name, maxBytes: 248)
            p.append(contentsOf: bytes)
            p.append(contentsOf: [UInt8](repeating: 0, count: 248 - bytes.count))
        case let .commandComplete(numCommands, opcode, returnParameters):
            code = Code.commandComplete
            p.append(numCommands); p.appendLE(opcode); p.append(contentsOf: returnParameters)
        case let .commandStatus(status, numCommands, opcode):
            code = Code.commandStatus
            p.append(status); p.append(numCommands); p.appendLE(opcode)
        case let .hardwareError(hardwareCode):
            code = Code.hardwareError; p = [hardwareCode]
        case let .numberOfCompletedPackets(entries):
            code = Code.numberOfCompletedPackets
            let some = entries.prefix(63)
            p.append(UInt8(some.count))
            for e in some { p.appendLE(e.handle); p.appendLE(e.count) }
        case let .pinCodeRequest(address):
            code = Code.pinCodeRequest; p.append(address: address)
        case let .linkKeyRequest(address):
            code = Code.linkKeyRequest; p.append(address: address)
        case let .linkKeyNotification(address, key, keyType):
            code = Code.linkKeyNotification
            p.append(address: address)
            p.append(contentsOf: key.prefix(16)); p.append(contentsOf: [UInt8](repeating: 0, count: 16 - min(16, key.count)))
            p.append(keyType)
        case let .ioCapabilityRequest(address):
            code = Code.ioCapabilityRequest; p.append(address: address)
        case let .ioCapabilityResponse(address, ioCapability, oob, authReq):
            code = Code.ioCapabilityResponse
            p.append(address: address); p.append(contentsOf: [ioCapability, oob, authReq])
        case let .userConfirmationRequest(address, value):
            code = Code.userConfirmationRequest
            p.append(address: address); p.appendLE(value)
        case let .simplePairingComplete(status, address):
            code = Code.simplePairingComplete
            p.append(status); p.append(address: address)
        case let .other(otherCode, parameters):
            code = otherCode; p = parameters
        }
        return .event(code: code, parameters: p)
    }
}
