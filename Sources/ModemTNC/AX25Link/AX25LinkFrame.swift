import ModemCodecs
import ModemRuntime

/// The sequence-number space of a connected-mode link: modulo 8 (one control byte in I and S frames,
/// AX.25 2.0 and SABM) or modulo 128 (two control bytes, AX.25 2.2 and SABME).
public enum AX25Modulo: Int, Sendable, Hashable {
    /// Sequence numbers 0...7, one control byte.
    case eight = 8
    /// Sequence numbers 0...127, two control bytes in I and S frames.
    case oneTwentyEight = 128
}

/// Why bytes are not a connected-mode AX.25 frame.
public struct AX25LinkFrameError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kinds of problem.
    public enum Kind: Sendable, Hashable {
        /// The address field is malformed (``AX25Error`` says how).
        case badAddress
        /// The frame ends before its (first or second) control byte.
        case missingControl
        /// An I frame without its PID byte.
        case missingPID
        /// A control byte that names no AX.25 frame type.
        case unknownControl
        /// A frame that may not carry an information field has one (SABM, SABME, DISC, DM, UA, RR, RNR, REJ).
        case unexpectedInformation
    }

    /// What went wrong.
    public var kind: Kind
    /// A one-line message naming the offending part.
    public var description: String

    /// Creates an error.
    public init(_ kind: Kind, _ description: String) {
        self.kind = kind
        self.description = description
    }
}

/// A frame of connected-mode AX.25 (2.0 and 2.2): I, S and U frames with their addresses, without FCS.
///
/// The control field (bit 0 is the first bit sent; P/F is the poll/final bit):
///
/// | frame | modulo 8 (one byte) | modulo 128 (two bytes, first byte first) |
/// | --- | --- | --- |
/// | I | `N(R)<<5 \| P<<4 \| N(S)<<1 \| 0` | `N(S)<<1 \| 0`, `N(R)<<1 \| P` |
/// | S | `N(R)<<5 \| P/F<<4 \| SS<<2 \| 01` | `SS<<2 \| 01`, `N(R)<<1 \| P/F` |
/// | U | `MMM<<5 \| P/F<<4 \| MM<<2 \| 11` | the same single byte |
///
/// SS is RR 00, RNR 01, REJ 10, SREJ 11. U frames (P/F clear): SABME 0x6F, SABM 0x2F, DISC 0x43,
/// DM 0x0F, UA 0x63, FRMR 0x87, UI 0x03, XID 0xAF, TEST 0xE3.
///
/// A frame does not say its modulo: a two-byte I or S control field looks like a one-byte one followed
/// by a PID or information. The receiver decides from the link the frame belongs to (``AX25DataLink``
/// knows whether it was set up by SABM or SABME), as the specification and Dire Wolf do; U frames are
/// the same in both.
///
/// Command or response is carried by the C bits of the destination and source addresses (v2): 1/0 is a
/// command, 0/1 a response; 0/0 and 1/1 are the v1 ("legacy") forms.
public struct AX25LinkFrame: Sendable, Hashable {
    /// Supervisory frame types.
    public enum Supervisory: UInt8, Sendable, Hashable, CaseIterable {
        /// Receive ready: acknowledges frames up to N(R) - 1, ready for more.
        case rr = 0
        /// Receive not ready: acknowledges, and asks the peer to stop sending I frames.
        case rnr = 1
        /// Reject: resend from N(R).
        case rej = 2
        /// Selective reject: resend the one frame N(R) (and those listed in its information field).
        case srej = 3
    }

    /// Unnumbered frame types.
    public enum Unnumbered: UInt8, Sendable, Hashable, CaseIterable {
        case sabme = 0x6F, sabm = 0x2F, disc = 0x43, dm = 0x0F, ua = 0x63, frmr = 0x87, ui = 0x03, xid = 0xAF, test = 0xE3
    }

    /// What the frame is, with the fields of its type.
    public enum Kind: Sendable, Hashable {
        /// An information frame: send sequence N(S), receive sequence N(R), PID and data.
        case information(ns: Int, nr: Int, pid: UInt8, info: [UInt8])
        /// A supervisory frame acknowledging up to N(R) - 1; SREJ may list more sequence numbers in `info`.
        case supervisory(Supervisory, nr: Int, info: [UInt8])
        /// An unnumbered frame; `pid` only for UI.
        case unnumbered(Unnumbered, pid: UInt8?, info: [UInt8])
    }

    /// Command, response, or one of the v1 forms.
    public enum CommandResponse: Sendable, Hashable {
        /// Destination C = 1, source C = 0.
        case command
        /// Destination C = 0, source C = 1.
        case response
        /// Both C bits equal (AX.25 1.x).
        case legacy
    }

    /// The station the frame is for.
    public var destination: AX25Address
    /// The station that sent it.
    public var source: AX25Address
    /// The digipeater path (at most 8), H bits as on the air.
    public var digipeaters: [AX25Address]
    /// Command or response, from the C bits.
    public var commandResponse: CommandResponse
    /// The poll (command) or final (response) bit.
    public var pollFinal: Bool
    /// The frame's type and fields.
    public var kind: Kind
    /// The modulo the control field is written in (only I and S frames differ).
    public var modulo: AX25Modulo

    /// Creates a frame.
    public init(destination: AX25Address, source: AX25Address, digipeaters: [AX25Address] = [],
                commandResponse: CommandResponse, pollFinal: Bool, kind: Kind, modulo: AX25Modulo = .eight) {
        precondition(digipeaters.count <= AX25Frame.maxDigipeaters, "AX25LinkFrame has at most 8 digipeaters")
        self.destination = destination
        self.source = source
        self.digipeaters = digipeaters
        self.commandResponse = commandResponse
        self.pollFinal = pollFinal
        self.kind = kind
        self.modulo = modulo
    }

    /// Whether the frame is a command (v1 frames: I, SABM(E), DISC, UI, XID and TEST with P count as commands).
    public var isCommand: Bool {
        switch commandResponse {
        case .command: return true
        case .response: return false
        case .legacy:
            switch kind {
            case .information: return true
            case .supervisory: return false
            case .unnumbered(let u, _, _): return [.sabm, .sabme, .disc].contains(u) || pollFinal && [.ui, .xid, .test].contains(u)
            }
        }
    }

    // MARK: decoding

    /// The addresses and first control byte of a frame, enough to find its link before its modulo is known.
    public struct Header: Sendable, Hashable {
        /// Destination, source, digipeaters.
        public var destination: AX25Address, source: AX25Address, digipeaters: [AX25Address]
        /// Offset of the first control byte.
        public var controlOffset: Int
        /// The first control byte.
        public var control: UInt8
        /// Whether it is a U frame (the modulo does not matter).
        public var isUnnumbered: Bool { control & 0x03 == 0x03 }
        /// The U frame type, if it is one this code knows.
        public var unnumbered: Unnumbered? { isUnnumbered ? Unnumbered(rawValue: control & 0xEF) : nil }
    }

    /// Decodes the address field and the first control byte (with ``AX25Frame``'s decoder, callsigns
    /// not checked strictly).
    /// - Throws: ``AX25LinkFrameError`` (`.badAddress`, `.missingControl`, `.missingPID`).
    public static func header(_ bytes: [UInt8]) throws(AX25LinkFrameError) -> Header {
        let plain: AX25Frame
        do {
            plain = try AX25Frame(decoding: bytes, strictCallsigns: false)
        } catch {
            switch error.kind {
            case .missingPID: throw AX25LinkFrameError(.missingPID, error.description)
            case .frameTooShort where bytes.count >= 14: throw AX25LinkFrameError(.missingControl, error.description)
            default: throw AX25LinkFrameError(.badAddress, error.description)
            }
        }
        return Header(destination: plain.destination, source: plain.source, digipeaters: plain.digipeaters,
                      controlOffset: 14 + 7 * plain.digipeaters.count, control: plain.control)
    }

    /// Decodes a frame whose link uses `modulo`.
    ///
    /// - Parameters:
    ///   - bytes: The frame without FCS.
    ///   - modulo: The modulo of the link the frame belongs to (decides one or two control bytes for I and S frames).
    /// - Throws: ``AX25LinkFrameError`` naming the problem; never traps.
    public init(decoding bytes: [UInt8], modulo: AX25Modulo) throws(AX25LinkFrameError) {
        let header = try Self.header(bytes)
        let c0 = header.control
        var offset = header.controlOffset + 1
        let cr: CommandResponse = switch (header.destination.highBit, header.source.highBit) {
        case (true, false): .command
        case (false, true): .response
        default: .legacy
        }
        var destination = header.destination, source = header.source
        destination.highBit = false
        source.highBit = false
        let kind: Kind
        let pf: Bool
        if c0 & 0x03 == 0x03 {
            guard let u = Unnumbered(rawValue: c0 & 0xEF) else {
                throw AX25LinkFrameError(.unknownControl, "control byte 0x\(ax25LinkHex(c0)) is no U frame")
            }
            pf = c0 & 0x10 != 0
            var pid: UInt8?
            if u == .ui {
                guard offset < bytes.count else { throw AX25LinkFrameError(.missingPID, "UI frame ends before its PID byte") }
                pid = bytes[offset]
                offset += 1
            }
            let info = Array(bytes[offset...])
            if [.sabm, .sabme, .disc, .dm, .ua].contains(u), !info.isEmpty {
                throw AX25LinkFrameError(.unexpectedInformation, "\(u) frame with \(info.count) bytes of information")
            }
            kind = .unnumbered(u, pid: pid, info: info)
        } else {
            var c1: UInt8 = 0
            if modulo == .oneTwentyEight {
                guard offset < bytes.count else {
                    throw AX25LinkFrameError(.missingControl, "modulo-128 \(c0 & 1 == 0 ? "I" : "S") frame ends before its second control byte")
                }
                c1 = bytes[offset]
                offset += 1
            }
            if c0 & 0x01 == 0 {
                let ns = modulo == .eight ? Int(c0 >> 1 & 7) : Int(c0 >> 1)
                let nr = modulo == .eight ? Int(c0 >> 5) : Int(c1 >> 1)
                pf = modulo == .eight ? c0 & 0x10 != 0 : c1 & 1 != 0
                guard offset < bytes.count else { throw AX25LinkFrameError(.missingPID, "I frame ends before its PID byte") }
                kind = .information(ns: ns, nr: nr, pid: bytes[offset], info: Array(bytes[(offset + 1)...]))
            } else {
                if modulo == .oneTwentyEight, c0 & 0xF0 != 0 {
                    throw AX25LinkFrameError(.unknownControl, "modulo-128 S frame with bits 4-7 of 0x\(ax25LinkHex(c0)) set")
                }
                let s = Supervisory(rawValue: c0 >> 2 & 3)!
                let nr = modulo == .eight ? Int(c0 >> 5) : Int(c1 >> 1)
                pf = modulo == .eight ? c0 & 0x10 != 0 : c1 & 1 != 0
                let info = Array(bytes[offset...])
                if s != .srej, !info.isEmpty {
                    throw AX25LinkFrameError(.unexpectedInformation, "\(s) frame with \(info.count) bytes of information")
                }
                kind = .supervisory(s, nr: nr, info: info)
            }
        }
        self.init(destination: destination, source: source, digipeaters: header.digipeaters,
                  commandResponse: cr, pollFinal: pf, kind: kind, modulo: modulo)
    }

    // MARK: encoding

    /// The frame's bytes without FCS (C bits from ``commandResponse``; reserved bits as in the addresses).
    public func encode() -> [UInt8] {
        var dest = destination, src = source
        switch commandResponse {
        case .command: dest.highBit = true; src.highBit = false
        case .response: dest.highBit = false; src.highBit = true
        case .legacy: dest.highBit = false; src.highBit = false
        }
        var bytes = dest.encode(isLast: false) + src.encode(isLast: digipeaters.isEmpty)
        for (i, d) in digipeaters.enumerated() { bytes += d.encode(isLast: i == digipeaters.count - 1) }
        let p: UInt8 = pollFinal ? 1 : 0
        let mask = UInt8(modulo.rawValue - 1)
        switch kind {
        case .information(let ns, let nr, let pid, let info):
            let ns = UInt8(ns & Int(mask)), nr = UInt8(nr & Int(mask))
            if modulo == .eight {
                bytes.append(nr << 5 | p << 4 | ns << 1)
            } else {
                bytes += [ns << 1, nr << 1 | p]
            }
            bytes.append(pid)
            bytes += info
        case .supervisory(let s, let nr, let info):
            let nr = UInt8(nr & Int(mask))
            if modulo == .eight {
                bytes.append(nr << 5 | p << 4 | s.rawValue << 2 | 1)
            } else {
                bytes += [s.rawValue << 2 | 1, nr << 1 | p]
            }
            bytes += info
        case .unnumbered(let u, let pid, let info):
            bytes.append(u.rawValue | p << 4)
            if u == .ui { bytes.append(pid ?? AX25Frame.noLayer3PID) }
            bytes += info
        }
        return bytes
    }

    /// A short description for logs, e.g. `N0CALL>W1AW I cmd N(S)=2 N(R)=5 P 17 bytes`.
    public var summary: String {
        let cr = commandResponse == .command ? "cmd" : commandResponse == .response ? "res" : "v1"
        let pf = pollFinal ? (commandResponse == .response ? " F" : " P") : ""
        let body: String = switch kind {
        case .information(let ns, let nr, _, let info): "I \(cr) N(S)=\(ns) N(R)=\(nr)\(pf) \(info.count) bytes"
        case .supervisory(let s, let nr, _): "\(String(describing: s).uppercased()) \(cr) N(R)=\(nr)\(pf)"
        case .unnumbered(let u, _, let info): "\(String(describing: u).uppercased()) \(cr)\(pf)\(info.isEmpty ? "" : " \(info.count) bytes")"
        }
        return "\(source)>\(destination) \(body)"
    }
}

/// Two lower-case hexadecimal digits.
func ax25LinkHex(_ byte: UInt8) -> String { Hex.encode(CollectionOfOne(byte)) }
