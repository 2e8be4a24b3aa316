/// Converts AX.25 frames (bytes without FCS) to an IL2P header and payload, and back.
///
/// A frame goes in a type 1 header (addresses, frame type and PID compressed into the header; the
/// payload is the information field) when it can: exactly two addresses with callsigns of A-Z and 0-9
/// and reserved SSID bits 11, a modulo-8 I, S or U frame other than SABME, a PID that has a 4-bit code,
/// and at most 1023 bytes of information. Every other frame goes in a type 0 header, its payload the
/// whole frame (at most 1023 bytes). The choices are Dire Wolf 1.7's, with three frames sent as type 0
/// that it would compress with a loss: a PID of AX.25's layer-3 group other than 0x20 (the code
/// restores 0x20), SABM, DISC, DM or UA with an information field, and reserved SSID bits other than 11.
///
/// What a type 1 header cannot carry, as in every IL2P implementation: the command/response bits are one
/// bit (the destination's C bit) and come back as a command (destination C 1, source C 0) or a response
/// (0, 1); an I frame always comes back as a command. APRS ignores them; the monitor format does not show
/// them. I frames whose information starts with 0xF0 or 0x08 and S frames with bytes after the control
/// byte may be modulo-128 frames; like Dire Wolf, those go as type 0.
public enum IL2PFrameMapping {
    /// AX.25 PIDs with a 4-bit code, by code (0 and 1 mark S and U frames; 7-10 are reserved and
    /// decode as 0xF0, as Dire Wolf does).
    static let pidByCode: [UInt8] = [0xF0, 0xF0, 0x20, 0x01, 0x06, 0x07, 0x08, 0xF0, 0xF0, 0xF0, 0xF0,
                                     0xCC, 0xCD, 0xCE, 0xCF, 0xF0]

    /// The U frames a type 1 header codes, by their 3-bit code: SABM, DISC, DM, UA, FRMR, UI, XID, TEST
    /// (control bytes with the P/F bit clear).
    static let uControls: [UInt8] = [0x2F, 0x43, 0x0F, 0x63, 0x87, 0x03, 0xAF, 0xE3]

    /// The 4-bit code of an AX.25 PID, or nil when it has none that decodes back to it.
    static func code(ofPID pid: UInt8) -> Int? {
        if pid == 0x20 { return 2 }   // AX.25 layer 3 (the group yy01yyyy / yy10yyyy decodes as 0x20)
        if pid == 0xF0 { return 15 }
        guard let i = pidByCode.firstIndex(of: pid), (3...14).contains(i) else { return nil }
        return i
    }

    /// The header and payload for `frame` (AX.25 bytes without FCS), or nil when it is longer than a
    /// type 0 payload can be (1023 bytes) or shorter than an AX.25 frame (15).
    /// - Parameter maximumFEC: set the FEC level bit (16 check bytes per payload block).
    public static func encode(_ frame: [UInt8], maximumFEC: Bool) -> (header: IL2PHeader, payload: [UInt8])? {
        if let t1 = type1(frame, maximumFEC: maximumFEC) { return t1 }
        guard (15...IL2PHeader.maximumPayloadCount).contains(frame.count) else { return nil }
        return (IL2PHeader(maximumFEC: maximumFEC, payloadCount: frame.count), frame)
    }

    /// A type 1 header and the information field, when the frame fits one.
    static func type1(_ frame: [UInt8], maximumFEC: Bool) -> (header: IL2PHeader, payload: [UInt8])? {
        // Exactly two addresses: the end bit on the source's SSID byte, not before.
        guard frame.count >= 15, frame[6] & 1 == 0, frame[13] & 1 == 1 else { return nil }
        var sixbit: [[UInt8]] = []
        for a in 0..<2 {
            var codes: [UInt8] = []
            var ended = false
            for i in 0..<6 {
                let byte = frame[7 * a + i]
                let c = byte >> 1
                guard byte & 1 == 0 else { return nil }
                if c == 0x20 { ended = true; codes.append(0); continue }
                guard !ended, (0x41...0x5A).contains(c) || (0x30...0x39).contains(c) else { return nil }
                codes.append(c - 0x20)
            }
            guard codes[0] != 0 else { return nil }
            // Reserved bits 11, as the receiving end restores them.
            guard frame[7 * a + 6] & 0x60 == 0x60 else { return nil }
            sixbit.append(codes)
        }
        let dstSSID = Int(frame[6] >> 1 & 0x0F), srcSSID = Int(frame[13] >> 1 & 0x0F)
        let c = frame[14]
        let command = frame[6] & 0x80 != 0   // the destination's C bit stands for both
        let pf = Int(c >> 4 & 1)
        var ui = false, pid = 0, control = 0
        var info: ArraySlice<UInt8>
        if c & 1 == 0 {
            // I frame: P/F, N(R), N(S); always a command. Its PID must have a code.
            guard frame.count >= 16, let code = code(ofPID: frame[15]) else { return nil }
            info = frame[16...]
            if let first = info.first, first == 0xF0 || first == 0x08 { return nil }   // maybe modulo 128
            pid = code
            control = pf << 6 | Int(c >> 5) << 3 | Int(c >> 1 & 7)
        } else if c & 3 == 1 {
            // S frame: P/F, N(R), C, and the two S bits; PID code 0. More bytes: maybe modulo 128.
            guard frame.count == 15 else { return nil }
            info = []
            control = pf << 6 | Int(c >> 5) << 3 | (command ? 4 : 0) | Int(c >> 2 & 3)
        } else {
            guard let op = uControls.firstIndex(of: c & 0xEF) else { return nil }   // SABME, others
            control = pf << 6 | op << 3 | (command ? 4 : 0)
            if op == 5 {
                // UI: the UI flag and the PID's code.
                guard frame.count >= 16, let code = code(ofPID: frame[15]) else { return nil }
                ui = true
                pid = code
                info = frame[16...]
            } else {
                pid = 1
                info = frame[15...]
                // SABM, DISC, DM and UA have no information field to carry.
                if op < 4 && !info.isEmpty { return nil }
            }
        }
        guard info.count <= IL2PHeader.maximumPayloadCount else { return nil }
        let header = IL2PHeader(isType1: true, maximumFEC: maximumFEC, payloadCount: info.count,
                                destination: sixbit[0], source: sixbit[1], destinationSSID: dstSSID, sourceSSID: srcSSID,
                                ui: ui, pid: pid, control: control)
        return (header, Array(info))
    }

    /// The AX.25 frame (bytes without FCS) a header and its payload (``IL2PHeader/payloadCount`` bytes)
    /// stand for, or nil when they stand for none: a type 1 callsign that is empty or not A-Z and 0-9
    /// (what a header miscorrected in noise usually gives), or a type 0 payload shorter than an AX.25
    /// frame (15 bytes).
    public static func decode(header: IL2PHeader, payload: [UInt8]) -> [UInt8]? {
        precondition(payload.count == header.payloadCount, "IL2P payload of \(payload.count) bytes for a header announcing \(header.payloadCount)")
        guard header.isType1 else { return payload.count >= 15 ? payload : nil }
        var frame: [UInt8] = []
        frame.reserveCapacity(16 + payload.count)
        let control = header.control
        let pf = UInt8(control >> 6 & 1)
        // Command unless the C code says response; I frames are always commands.
        let command = header.pid >= 2 && !header.ui ? true : control & 4 != 0
        for (a, codes) in [header.destination, header.source].enumerated() {
            // Trailing spaces end the callsign; what is left must be A-Z and 0-9.
            var n = 6
            while n > 0 && codes[n - 1] == 0 { n -= 1 }
            guard n > 0 else { return nil }
            for i in 0..<6 {
                let ch = i < n ? codes[i] + 0x20 : 0x20
                if i < n { guard (0x41...0x5A).contains(ch) || (0x30...0x39).contains(ch) else { return nil } }
                frame.append(ch << 1)
            }
            let ssid = UInt8(a == 0 ? header.destinationSSID : header.sourceSSID)
            let c: UInt8 = (a == 0) == command ? 0x80 : 0
            frame.append(c | 0x60 | ssid << 1 | (a == 1 ? 1 : 0))
        }
        switch header.pid {
        case 0:
            // S frame: N(R), P/F, the S bits.
            frame.append(UInt8(control >> 3 & 7) << 5 | pf << 4 | UInt8(control & 3) << 2 | 0x01)
        case 1:
            let op = control >> 3 & 7
            frame.append(uControls[op] | pf << 4)
            if op == 5 { frame.append(0xF0) }   // a UI frame coded as "U": Dire Wolf gives it PID 0xF0
        default:
            if header.ui {
                frame.append(0x03 | pf << 4)
            } else {
                frame.append(UInt8(control >> 3 & 7) << 5 | pf << 4 | UInt8(control & 7) << 1)
            }
            frame.append(pidByCode[header.pid])
        }
        frame += payload
        return frame
    }
}
