import ModemCodecs

/// A local time of day, for the `[HH:MM:SS]` of monitor frames (Dire Wolf prints local time).
public struct AGWTimeOfDay: Sendable, Hashable {
    public var hour: Int
    public var minute: Int
    public var second: Int

    /// A time, 0...23, 0...59, 0...60.
    public init(hour: Int, minute: Int, second: Int) {
        self.hour = hour
        self.minute = minute
        self.second = second
    }

    /// `[08:25:07]`.
    var bracketed: String {
        func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "[\(two(hour)):\(two(minute)):\(two(second))]"
    }
}

/// The messages an AGW server sends, each exactly as Dire Wolf 1.8's server (server.c) builds it: the
/// same kind, port, calls, PID and data, byte for byte.
extension AGWFrame {
    /// `R`: version 2005.127 (what Dire Wolf says; UI-View32 wants 2000.15 or later).
    public static func versionReply() -> AGWFrame {
        AGWFrame(kind: "R", data: le32(2005) + le32(127))
    }

    /// `G`: `N;Port1 first soundcard mono;...` and a NUL: the count, then one `PortK text;` per port.
    public static func portInformationReply(_ descriptions: [String]) -> AGWFrame {
        var text = "\(descriptions.count);"
        for (i, d) in descriptions.enumerated() { text += "Port\(i + 1) \(d);" }
        return AGWFrame(kind: "G", data: Array(text.utf8) + [0])
    }

    /// `g`: the port's capabilities, 12 bytes: on-air rate (0: 1200), traffic level 1, TXDELAY 0x19,
    /// TXTAIL 4, persistence 0xC8, slot time 4, MAXFRAME 7, 0 active connections, then u32 1. These
    /// are the fixed values Dire Wolf sends ("to keep applications happy"), whatever the real ones.
    public static func portCapabilitiesReply(port: UInt8) -> AGWFrame {
        AGWFrame(port: port, kind: "g", data: [0, 1, 0x19, 4, 0xC8, 4, 7, 0] + le32(1))
    }

    /// `X`: the registration's result, one byte (1: success), with the port and callsign asked about.
    public static func registrationReply(port: UInt8, callsign: String, success: Bool) -> AGWFrame {
        AGWFrame(port: port, kind: "X", callFrom: callsign, data: [success ? 1 : 0])
    }

    /// `y`: frames waiting to be sent on the port (u32).
    public static func outstandingOnPortReply(port: UInt8, count: Int) -> AGWFrame {
        AGWFrame(port: port, kind: "y", data: le32(count))
    }

    /// `Y`: frames not yet acknowledged on a link (u32), from our callsign to the remote one.
    public static func outstandingOnConnectionReply(port: UInt8, own: String, remote: String, count: Int) -> AGWFrame {
        AGWFrame(port: port, kind: "Y", callFrom: own, callTo: remote, data: le32(count))
    }

    /// `C`: a link is up, from the remote callsign to ours: `*** CONNECTED To Station REMOTE\r` when
    /// the other end started it, `*** CONNECTED With Station REMOTE\r` when we did, and a NUL.
    public static func connectedReply(port: UInt8, remote: String, own: String, incoming: Bool) -> AGWFrame {
        let text = "*** CONNECTED \(incoming ? "To" : "With") Station \(remote)\r"
        return AGWFrame(port: port, kind: "C", callFrom: remote, callTo: own, data: Array(text.utf8) + [0])
    }

    /// `D`: data received on a link, from the remote callsign to ours, with the I frames' PID.
    public static func connectedDataReply(port: UInt8, remote: String, own: String, pid: UInt8, data: [UInt8]) -> AGWFrame {
        AGWFrame(port: port, kind: "D", pid: pid, callFrom: remote, callTo: own, data: Array(data.prefix(2048)))
    }

    /// `d`: a link ended or could not be made, from the remote callsign to ours:
    /// `*** DISCONNECTED RETRYOUT With REMOTE\r` when the other station never answered (a connect that
    /// failed), `*** DISCONNECTED From Station REMOTE\r` otherwise, and a NUL.
    public static func disconnectedReply(port: UInt8, remote: String, own: String, retryOut: Bool) -> AGWFrame {
        let text = retryOut ? "*** DISCONNECTED RETRYOUT With \(remote)\r" : "*** DISCONNECTED From Station \(remote)\r"
        return AGWFrame(port: port, kind: "d", callFrom: remote, callTo: own, data: Array(text.utf8) + [0])
    }

    /// `K`: a frame heard (bytes without FCS), after a byte with the port in its high nibble (Dire
    /// Wolf 1.8; earlier versions sent 0), from its source to its destination.
    public static func rawFrame(port: UInt8, frame: AX25Frame, bytes: [UInt8]) -> AGWFrame {
        AGWFrame(port: port, kind: "K", callFrom: frame.source.description, callTo: frame.destination.description,
                 data: [port << 4] + bytes)
    }

    /// A monitor message: `U` (UI frames), `I` (I frames), `S` (supervisory and other unnumbered
    /// frames), or `T` for our own transmissions, as Dire Wolf writes them:
    /// ` 1:Fm SRC To DST Via D1,D2* <UI pid=F0 Len=5 P=0 >[08:25:07]\r` then the information and `\r`
    /// (when there is any) and a NUL. Only the last digipeater that repeated the frame is starred (the
    /// TNC-2 convention). P/F reads `P` for a command, `F` for a response, `PF` when the C bits say
    /// neither (APRS often).
    public static func monitorFrame(port: UInt8, frame: AX25Frame, ownTransmission: Bool, time: AGWTimeOfDay) -> AGWFrame {
        var text = " \(Int(port) + 1):Fm \(frame.source) To \(frame.destination) "
        if !frame.digipeaters.isEmpty {
            let heard = frame.lastRepeaterIndex
            let path = frame.digipeaters.enumerated().map { i, d in d.description + (i == heard ? "*" : "") }
            text = " \(Int(port) + 1):Fm \(frame.source) To \(frame.destination) Via \(path.joined(separator: ",")) "
        }
        let (description, kind, info) = monitorDescription(frame)
        text += description + time.bracketed + "\r"
        var data = Array(text.utf8)
        if !info.isEmpty {
            data += info
            data.append(0x0D)
        }
        data.append(0)
        return AGWFrame(port: port, kind: ownTransmission ? "T" : kind, callFrom: frame.source.description,
                        callTo: frame.destination.description, data: data)
    }

    /// `<UI pid=F0 Len=5 P=0 >`, the kind letter (`U`, `I` or `S`) and the information to show, from
    /// the control field. A frame does not say its modulo, so an I or S frame is read as modulo 128 the
    /// way Dire Wolf guesses for its monitor: an S frame with a byte after its control byte (the second
    /// control byte), an I frame whose byte after the would-be PID is 0xF0 or 0x08 (the real PID, the
    /// would-be PID being the second control byte). Otherwise modulo 8.
    static func monitorDescription(_ frame: AX25Frame) -> (String, Character, [UInt8]) {
        let c = frame.control
        let pfText: String
        switch (frame.destination.highBit, frame.source.highBit) {
        case (true, false): pfText = "P"
        case (false, true): pfText = "F"
        default: pfText = "PF"
        }
        func hex(_ b: UInt8) -> String { (b < 16 ? "0" : "") + String(b, radix: 16, uppercase: true) }
        if c & 1 == 0 {
            if let c2 = frame.pid, let pid = frame.info.first, pid == 0xF0 || pid == 0x08 {
                let info = Array(frame.info.dropFirst())
                let ns = Int(c >> 1), nr = Int(c2 >> 1), pf = Int(c2 & 1)
                return ("<I S\(ns) R\(nr) pid=\(hex(pid)) Len=\(info.count) \(pfText)=\(pf) >", "I", info)
            }
            let ns = Int((c >> 1) & 7), nr = Int(c >> 5), pf = Int((c >> 4) & 1)
            return ("<I S\(ns) R\(nr) pid=\(hex(frame.pid ?? 0)) Len=\(frame.info.count) \(pfText)=\(pf) >", "I", frame.info)
        }
        if c & 3 == 1 {
            var nr = Int(c >> 5), pf = Int((c >> 4) & 1)
            var info = frame.info
            if let c2 = frame.info.first {
                nr = Int(c2 >> 1)
                pf = Int(c2 & 1)
                info.removeFirst()
            }
            switch (c >> 2) & 3 {
            case 0: return ("<RR R\(nr) \(pfText)=\(pf) >", "S", info)
            case 1: return ("<RNR R\(nr) \(pfText)=\(pf) >", "S", info)
            case 2: return ("<REJ R\(nr) \(pfText)=\(pf) >", "S", info)
            default: return ("<SREJ R\(nr) \(pfText)=\(pf) Len=\(info.count) >", "S", info)
            }
        }
        let pf = Int((c >> 4) & 1)
        let length = frame.info.count
        let described: (String, Character)
        switch c & 0xEF {
        case 0x03: described = ("<UI pid=\(hex(frame.pid ?? 0)) Len=\(length) \(pfText)=\(pf) >", "U")
        case 0x6F: described = ("<SABME \(pfText)=\(pf) >", "S")
        case 0x2F: described = ("<SABM \(pfText)=\(pf) >", "S")
        case 0x43: described = ("<DISC \(pfText)=\(pf) >", "S")
        case 0x0F: described = ("<DM \(pfText)=\(pf) >", "S")
        case 0x63: described = ("<UA \(pfText)=\(pf) >", "S")
        case 0x87: described = ("<FRMR \(pfText)=\(pf) >", "S")
        case 0xAF: described = ("<XID \(pfText)=\(pf) Len=\(length) >", "S")
        case 0xE3: described = ("<TEST \(pfText)=\(pf) Len=\(length) >", "S")
        default: described = ("<U other??? >", "S")
        }
        return (described.0, described.1, frame.info)
    }
}
