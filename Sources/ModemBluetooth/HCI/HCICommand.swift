/// The HCI commands the host stack sends (Core Vol 4 Part E §7), as opcodes, names and builders of
/// whole command packets. Addresses go out least significant byte first.
public enum HCICommand {
    /// Command opcodes (OGF << 10 | OCF).
    public enum Opcode {
        /// Inquiry (Link Control 0x0001).
        public static let inquiry: UInt16 = 0x0401
        /// Inquiry_Cancel.
        public static let inquiryCancel: UInt16 = 0x0402
        /// Create_Connection.
        public static let createConnection: UInt16 = 0x0405
        /// Disconnect.
        public static let disconnect: UInt16 = 0x0406
        /// Create_Connection_Cancel.
        public static let createConnectionCancel: UInt16 = 0x0408
        /// Accept_Connection_Request.
        public static let acceptConnectionRequest: UInt16 = 0x0409
        /// Reject_Connection_Request.
        public static let rejectConnectionRequest: UInt16 = 0x040A
        /// Link_Key_Request_Negative_Reply.
        public static let linkKeyRequestNegativeReply: UInt16 = 0x040C
        /// PIN_Code_Request_Negative_Reply.
        public static let pinCodeRequestNegativeReply: UInt16 = 0x040E
        /// Authentication_Requested.
        public static let authenticationRequested: UInt16 = 0x0411
        /// Remote_Name_Request.
        public static let remoteNameRequest: UInt16 = 0x0419
        /// Remote_Name_Request_Cancel.
        public static let remoteNameRequestCancel: UInt16 = 0x041A
        /// IO_Capability_Request_Reply.
        public static let ioCapabilityRequestReply: UInt16 = 0x042B
        /// User_Confirmation_Request_Reply.
        public static let userConfirmationRequestReply: UInt16 = 0x042C
        /// Set_Event_Mask.
        public static let setEventMask: UInt16 = 0x0C01
        /// Reset.
        public static let reset: UInt16 = 0x0C03
        /// Write_Local_Name.
        public static let writeLocalName: UInt16 = 0x0C13
        /// Write_Page_Timeout.
        public static let writePageTimeout: UInt16 = 0x0C18
        /// Write_Scan_Enable.
        public static let writeScanEnable: UInt16 = 0x0C1A
        /// Write_Class_Of_Device.
        public static let writeClassOfDevice: UInt16 = 0x0C24
        /// Write_Inquiry_Mode.
        public static let writeInquiryMode: UInt16 = 0x0C45
        /// Write_Extended_Inquiry_Response.
        public static let writeExtendedInquiryResponse: UInt16 = 0x0C52
        /// Write_Simple_Pairing_Mode.
        public static let writeSimplePairingMode: UInt16 = 0x0C56
        /// Read_Local_Version_Information.
        public static let readLocalVersionInformation: UInt16 = 0x1001
        /// Read_Buffer_Size.
        public static let readBufferSize: UInt16 = 0x1005
        /// Read_BD_ADDR.
        public static let readBDADDR: UInt16 = 0x1009
    }

    private static let names: [UInt16: String] = [
        Opcode.inquiry: "Inquiry", Opcode.inquiryCancel: "Inquiry_Cancel",
        Opcode.createConnection: "Create_Connection", Opcode.disconnect: "Disconnect",
        Opcode.createConnectionCancel: "Create_Connection_Cancel",
        Opcode.acceptConnectionRequest: "Accept_Connection_Request",
        Opcode.rejectConnectionRequest: "Reject_Connection_Request",
        Opcode.linkKeyRequestNegativeReply: "Link_Key_Request_Negative_Reply",
        Opcode.pinCodeRequestNegativeReply: "PIN_Code_Request_Negative_Reply",
        Opcode.authenticationRequested: "Authentication_Requested",
        Opcode.remoteNameRequest: "Remote_Name_Request", Opcode.remoteNameRequestCancel: "Remote_Name_Request_Cancel",
        Opcode.ioCapabilityRequestReply: "IO_Capability_Request_Reply",
        Opcode.userConfirmationRequestReply: "User_Confirmation_Request_Reply",
        Opcode.setEventMask: "Set_Event_Mask", Opcode.reset: "Reset", Opcode.writeLocalName: "Write_Local_Name",
        Opcode.writePageTimeout: "Write_Page_Timeout", Opcode.writeScanEnable: "Write_Scan_Enable",
        Opcode.writeClassOfDevice: "Write_Class_Of_Device", Opcode.writeInquiryMode: "Write_Inquiry_Mode",
        Opcode.writeExtendedInquiryResponse: "Write_Extended_Inquiry_Response",
        Opcode.writeSimplePairingMode: "Write_Simple_Pairing_Mode",
        Opcode.readLocalVersionInformation: "Read_Local_Version_Information",
        Opcode.readBufferSize: "Read_Buffer_Size", Opcode.readBDADDR: "Read_BD_ADDR",
    ]

    /// "Reset (0x0C03)" for a known opcode, "0x0C99" otherwise.
    public static func name(of opcode: UInt16) -> String {
        if let name = names[opcode] { return "\(name) (\(HCIFormat.hex16(opcode)))" }
        return HCIFormat.hex16(opcode)
    }

    /// The General Inquiry Access Code, 0x9E8B33.
    public static let giac: UInt32 = 0x9E8B33

    /// The events the host wants (Set_Event_Mask bit = event code - 1): inquiry, connections,
    /// disconnection, authentication, names, hardware error, completed packets, SSP and link keys.
    public static let eventMask: UInt64 = {
        let codes: [UInt8] = [0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x0E, 0x0F, 0x10, 0x12, 0x13,
                              0x16, 0x17, 0x18, 0x22, 0x2F, 0x31, 0x32, 0x33, 0x36]
        return codes.reduce(UInt64(0)) { $0 | UInt64(1) << UInt64($1 - 1) }
    }()

    // MARK: - Builders

    /// Inquiry: `lap` (GIAC by default), `length` in units of 1.28 s (clamped to 1...0x30),
    /// `maxResponses` (0 = unlimited).
    public static func inquiry(lap: UInt32 = giac, length: UInt8, maxResponses: UInt8 = 0) -> HCIPacket {
        var p: [UInt8] = []
        p.appendLE24(lap)
        p.append(min(max(length, 1), 0x30))
        p.append(maxResponses)
        return .command(opcode: Opcode.inquiry, parameters: p)
    }

    /// Inquiry_Cancel.
    public static func inquiryCancel() -> HCIPacket { .command(opcode: Opcode.inquiryCancel, parameters: []) }

    /// Create_Connection: packet types DM1/DH1/DM3/DH3/DM5/DH5 (0xCC18), page scan repetition mode
    /// R1, no clock offset, role switch allowed.
    public static func createConnection(_ address: BDAddress, packetType: UInt16 = 0xCC18,
                                        pageScanRepetitionMode: UInt8 = 0x01, clockOffset: UInt16 = 0,
                                        allowRoleSwitch: Bool = true) -> HCIPacket {
        var p: [UInt8] = []
        p.append(address: address)
        p.appendLE(packetType)
        p.append(pageScanRepetitionMode)
        p.append(0)
        p.appendLE(clockOffset)
        p.append(allowRoleSwitch ? 1 : 0)
        return .command(opcode: Opcode.createConnection, parameters: p)
    }

    /// Create_Connection_Cancel.
    public static func createConnectionCancel(_ address: BDAddress) -> HCIPacket {
        .command(opcode: Opcode.createConnectionCancel, parameters: address.wire)
    }

    /// Disconnect `handle` with `reason` (0x13 remote user terminated connection by default).
    public static func disconnect(handle: UInt16, reason: UInt8 = 0x13) -> HCIPacket {
        var p: [UInt8] = []
        p.appendLE(handle & 0x0FFF)
        p.append(reason)
        return .command(opcode: Opcode.disconnect, parameters: p)
    }

    /// Accept_Connection_Request; role 0x01 stays peripheral, 0x00 asks to become central.
    public static func acceptConnectionRequest(_ address: BDAddress, role: UInt8 = 0x01) -> HCIPacket {
        .command(opcode: Opcode.acceptConnectionRequest, parameters: address.wire + [role])
    }

    /// Reject_Connection_Request with `reason` (0x0F unacceptable BD_ADDR, 0x0D limited resources).
    public static func rejectConnectionRequest(_ address: BDAddress, reason: UInt8 = 0x0F) -> HCIPacket {
        .command(opcode: Opcode.rejectConnectionRequest, parameters: address.wire + [reason])
    }

    /// Link_Key_Request_Negative_Reply (we keep no link keys).
    public static func linkKeyRequestNegativeReply(_ address: BDAddress) -> HCIPacket {
        .command(opcode: Opcode.linkKeyRequestNegativeReply, parameters: address.wire)
    }

    /// PIN_Code_Request_Negative_Reply (no PIN pairing).
    public static func pinCodeRequestNegativeReply(_ address: BDAddress) -> HCIPacket {
        .command(opcode: Opcode.pinCodeRequestNegativeReply, parameters: address.wire)
    }

    /// Authentication_Requested on `handle`.
    public static func authenticationRequested(handle: UInt16) -> HCIPacket {
        var p: [UInt8] = []
        p.appendLE(handle & 0x0FFF)
        return .command(opcode: Opcode.authenticationRequested, parameters: p)
    }

    /// Remote_Name_Request: page scan repetition mode R1 and no clock offset unless known.
    public static func remoteNameRequest(_ address: BDAddress, pageScanRepetitionMode: UInt8 = 0x01,
                                         clockOffset: UInt16 = 0) -> HCIPacket {
        var p: [UInt8] = []
        p.append(address: address)
        p.append(pageScanRepetitionMode)
        p.append(0)
        p.appendLE(clockOffset)
        return .command(opcode: Opcode.remoteNameRequest, parameters: p)
    }

    /// Remote_Name_Request_Cancel.
    public static func remoteNameRequestCancel(_ address: BDAddress) -> HCIPacket {
        .command(opcode: Opcode.remoteNameRequestCancel, parameters: address.wire)
    }

    /// IO_Capability_Request_Reply: NoInputNoOutput (0x03), no OOB data, no MITM protection
    /// (authentication requirements 0x00): Secure Simple Pairing "just works".
    public static func ioCapabilityRequestReply(_ address: BDAddress, ioCapability: UInt8 = 0x03,
                                                oobDataPresent: UInt8 = 0x00,
                                                authenticationRequirements: UInt8 = 0x00) -> HCIPacket {
        .command(opcode: Opcode.ioCapabilityRequestReply,
                 parameters: address.wire + [ioCapability, oobDataPresent, authenticationRequirements])
    }

    /// User_Confirmation_Request_Reply (accept the numeric comparison).
    public static func userConfirmationRequestReply(_ address: BDAddress) -> HCIPacket {
        .command(opcode: Opcode.userConfirmationRequestReply, parameters: address.wire)
    }

    /// Set_Event_Mask (8 bytes, little-endian).
    public static func setEventMask(_ mask: UInt64 = eventMask) -> HCIPacket {
        var p: [UInt8] = []
        p.appendLE(UInt32(truncatingIfNeeded: mask))
        p.appendLE(UInt32(truncatingIfNeeded: mask >> 32))
        return .command(opcode: Opcode.setEventMask, parameters: p)
    }

    /// Reset.
    public static func reset() -> HCIPacket { .command(opcode: Opcode.reset, parameters: []) }

    /// Write_Local_Name: 248 bytes, UTF-8, NUL-padded (a longer name is cut at a character boundary).
    public static func writeLocalName(_ name: String) -> HCIPacket {
        var p = utf8Prefix(name, maxBytes: 248)
        p.append(contentsOf: [UInt8](repeating: 0, count: 248 - p.count))
        return .command(opcode: Opcode.writeLocalName, parameters: p)
    }

    /// Write_Page_Timeout in slots of 0.625 ms (0x2000 = 5.12 s).
    public static func writePageTimeout(slots: UInt16 = 0x2000) -> HCIPacket {
        var p: [UInt8] = []
        p.appendLE(slots)
        return .command(opcode: Opcode.writePageTimeout, parameters: p)
    }

    /// Write_Scan_Enable: 0x00 none, 0x01 inquiry scan, 0x02 page scan, 0x03 both.
    public static func writeScanEnable(_ scan: UInt8) -> HCIPacket {
        .command(opcode: Opcode.writeScanEnable, parameters: [scan])
    }

    /// Write_Class_Of_Device (the low 24 bits).
    public static func writeClassOfDevice(_ classOfDevice: UInt32) -> HCIPacket {
        var p: [UInt8] = []
        p.appendLE24(classOfDevice)
        return .command(opcode: Opcode.writeClassOfDevice, parameters: p)
    }

    /// Write_Inquiry_Mode: 0 standard, 1 with RSSI, 2 extended.
    public static func writeInquiryMode(_ mode: UInt8) -> HCIPacket {
        .command(opcode: Opcode.writeInquiryMode, parameters: [mode])
    }

    /// Write_Extended_Inquiry_Response: FEC required, then the EIR data zero-padded to 240 bytes
    /// (longer data is cut).
    public static func writeExtendedInquiryResponse(_ eir: [UInt8], fecRequired: Bool = true) -> HCIPacket {
        var p: [UInt8] = [fecRequired ? 1 : 0]
        p.append(contentsOf: eir.prefix(240))
        p.append(contentsOf: [UInt8](repeating: 0, count: 241 - p.count))
        return .command(opcode: Opcode.writeExtendedInquiryResponse, parameters: p)
    }

    /// Write_Simple_Pairing_Mode (enabled).
    public static func writeSimplePairingMode(enabled: Bool = true) -> HCIPacket {
        .command(opcode: Opcode.writeSimplePairingMode, parameters: [enabled ? 1 : 0])
    }

    /// Read_Local_Version_Information.
    public static func readLocalVersionInformation() -> HCIPacket {
        .command(opcode: Opcode.readLocalVersionInformation, parameters: [])
    }

    /// Read_Buffer_Size.
    public static func readBufferSize() -> HCIPacket { .command(opcode: Opcode.readBufferSize, parameters: []) }

    /// Read_BD_ADDR.
    public static func readBDADDR() -> HCIPacket { .command(opcode: Opcode.readBDADDR, parameters: []) }

    /// The UTF-8 bytes of `text`, cut to at most `maxBytes` without splitting a character.
    static func utf8Prefix(_ text: String, maxBytes: Int) -> [UInt8] {
        var out: [UInt8] = []
        for scalar in text.unicodeScalars {
            let bytes = Array(String(scalar).utf8)
            if out.count + bytes.count > maxBytes { break }
            out.append(contentsOf: bytes)
        }
        return out
    }
}
