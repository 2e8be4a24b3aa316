/// Whether the bytes of a frame that passed its FCS only after CRC-guided repair look like a frame a
/// station sent.
///
/// A 16-bit FCS passes a wrong frame with probability 1 in 65,536 per try, and a repair search makes
/// one try per position it inverts (about one per received bit): on a 100-byte frame, a damaged frame
/// that cannot be repaired still "repairs" about once in 80 searches (see ``HDLCFrameCandidate``). Those
/// false frames are the damaged frame with two more bits inverted, so they carry its errors. This test,
/// meant for repaired frames only (a frame whose FCS passed as received is taken as sent), rejects
/// bytes a station would not send:
///
/// - the frame must decode as an ``AX25Frame`` with strict callsigns (A-Z, 0-9, padded with trailing
///   spaces) and at most 8 digipeaters;
/// - every SSID byte has its two reserved bits set (as every TNC sends them), and the digipeaters that
///   have repeated the frame (H bit) come first in the path;
/// - the control byte is a modulo-8 I or S frame, or one of the U frames AX.25 2.2 defines (UI, SABM,
///   SABME, DISC, DM, UA, FRMR, XID, TEST); S frames and U frames other than UI, FRMR, XID and TEST have no
///   information field;
/// - the PID is one AX.25 2.2 assigns (0x01, 0x06, 0x07, 0x08, 0xC3, 0xC4, 0xCA...0xCF, 0xF0, 0xFF);
/// - with PID 0xF0 (no layer 3: APRS and plain text) the information field is text: printable ASCII,
///   tab, CR, LF, the Mic-E bytes 0x1C...0x1F and 0x7F, or well-formed UTF-8; at most 256 bytes.
///
/// This is Dire Wolf's "sanity check" idea for fixed frames, made stricter where AX.25 2.2 says what is
/// legal. It may drop a real frame that needed a repair and breaks one of these rules (for example
/// Latin-1 text under PID 0xF0); it never touches a frame that arrived intact.
///
/// ```swift
/// let bytes = try AX25Frame(monitorLine: "N0CALL>APRS,WIDE1-1:hello").encode()
/// AX25Plausibility.problem(in: bytes)   // nil: plausible
/// ```
public enum AX25Plausibility {
    /// Why repaired bytes were judged implausible.
    public enum Problem: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
        /// The bytes do not decode as an AX.25 frame with strict callsigns.
        case malformed
        /// An SSID byte's reserved bits are not both set, or a digipeater marked repeated follows one
        /// that is not.
        case address
        /// The control byte is not one AX.25 defines, or an S or U frame carries an information field
        /// it may not have.
        case control
        /// The PID is not one AX.25 assigns.
        case pid
        /// Under PID 0xF0 the information field is not text, or it is longer than 256 bytes.
        case info

        /// The name used in statistics (`malformed`, `address`, `control`, `pid`, `info`).
        public var description: String { rawValue }
    }

    /// The PIDs AX.25 2.2 assigns (section 3.4); other values are not sent in practice.
    public static let knownPIDs: Set<UInt8> = [0x01, 0x06, 0x07, 0x08, 0xC3, 0xC4, 0xCA, 0xCB, 0xCC, 0xCD, 0xCE, 0xCF, 0xF0, 0xFF]

    /// The longest information field accepted under PID 0xF0 (AX.25's default N1 and APRS's limit).
    public static let maximumTextLength = 256

    /// What makes `bytes` (a frame without its FCS) implausible, or `nil` when it is plausible.
    public static func problem(in bytes: some Collection<UInt8>) -> Problem? {
        let bytes = Array(bytes)
        guard let frame = try? AX25Frame(decoding: bytes, strictCallsigns: true) else { return .malformed }
        // The SSID bytes are the 7th of each address; the address field is 7 bytes per address.
        let addressCount = 2 + frame.digipeaters.count
        for a in 0..<addressCount where bytes[7 * a + 6] & 0x60 != 0x60 {
            return .address
        }
        if let last = frame.lastRepeaterIndex, frame.digipeaters[..<last].contains(where: { !$0.hasBeenRepeated }) {
            return .address
        }
        let control = frame.control
        if control & 0x01 == 0 {
            // I frame: any N(S), N(R), P bit.
        } else if control & 0x03 == 0x01 {
            // S frame (RR, RNR, REJ, SREJ): no information field.
            guard frame.info.isEmpty else { return .control }
        } else {
            switch control & 0xEF {
            case 0x03, 0xAF, 0xE3: break                // UI, XID, TEST
            case 0x87: guard frame.info.count <= 3 else { return .control }   // FRMR
            case 0x2F, 0x6F, 0x43, 0x0F, 0x63:          // SABM, SABME, DISC, DM, UA
                guard frame.info.isEmpty else { return .control }
            default: return .control
            }
        }
        if let pid = frame.pid {
            guard knownPIDs.contains(pid) else { return .pid }
            if pid == AX25Frame.noLayer3PID, !isText(frame.info) { return .info }
        }
        return nil
    }

    /// Whether `info` is text as stations send it: at most ``maximumTextLength`` bytes of printable
    /// ASCII, tab, CR, LF, 0x1C...0x1F and 0x7F (Mic-E), or well-formed UTF-8 sequences.
    public static func isText(_ info: [UInt8]) -> Bool {
        guard info.count <= maximumTextLength else { return false }
        var i = 0
        while i < info.count {
            let b = info[i]
            switch b {
            case 0x20...0x7F, 0x1C...0x1F, 0x09, 0x0A, 0x0D:
                i += 1
                continue
            case 0xC2...0xDF: if continuation(info, i, 1) { i += 2; continue }
            case 0xE0...0xEF: if continuation(info, i, 2) { i += 3; continue }
            case 0xF0...0xF4: if continuation(info, i, 3) { i += 4; continue }
            default: break
            }
            return false
        }
        return true
    }

    /// Whether `count` UTF-8 continuation bytes (0x80...0xBF) follow index `i`.
    private static func continuation(_ info: [UInt8], _ i: Int, _ count: Int) -> Bool {
        guard i + count < info.count else { return false }
        return info[(i + 1)...(i + count)].allSatisfy { $0 & 0xC0 == 0x80 }
    }
}
