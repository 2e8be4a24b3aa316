/// A request for a connected-mode link (AGW `C`, `v`, `c`): from our callsign to a remote one,
/// through digipeaters, with the PID of the I frames.
public struct AGWConnectRequest: Sendable, Hashable {
    /// The radio port.
    public var port: Int
    /// Our callsign (the header's call from).
    public var from: String
    /// The remote station's.
    public var to: String
    /// The digipeaters (`v` only; 1 to 7 of them).
    public var via: [String]
    /// The PID: 0xF0, or the header's for `c` (non-standard connections such as NET/ROM).
    public var pid: UInt8

    /// A request.
    public init(port: Int, from: String, to: String, via: [String] = [], pid: UInt8 = 0xF0) {
        self.port = port
        self.from = from
        self.to = to
        self.via = via
        self.pid = pid
    }
}

/// What a client asks of an AGW server: one case per data kind Dire Wolf 1.8 reads, typed.
public enum AGWCommand: Sendable, Hashable {
    /// `R`: the version.
    case version
    /// `G`: the radio ports.
    case portInformation
    /// `g`: a port's capabilities.
    case portCapabilities(port: Int)
    /// `H`: the stations heard on a port (Dire Wolf does not answer it).
    case heardStations(port: Int)
    /// `k`: raw frames (`K`) on or off, a toggle.
    case toggleRawFrames
    /// `m`: monitor frames (`U`, `I`, `S`, `T`) on or off, a toggle.
    case toggleMonitorFrames
    /// `M` (no path) and `V` (with one): send a UI frame. A PID of 0 means 0xF0, as in Dire Wolf.
    case sendUnproto(port: Int, pid: UInt8, from: String, to: String, via: [String], info: [UInt8])
    /// `K`: send a raw AX.25 frame (without FCS; the data's first byte, the "TNC" port, is dropped).
    case sendRaw(port: Int, frame: [UInt8])
    /// `P`: application login (ignored, as Dire Wolf does).
    case login
    /// `X`: register a callsign (for incoming connections).
    case register(port: Int, callsign: String)
    /// `x`: unregister it.
    case unregister(port: Int, callsign: String)
    /// `y`: frames waiting to be sent on a port.
    case outstandingOnPort(port: Int)
    /// `C`, `v`, `c`: start a connected-mode link.
    case connect(AGWConnectRequest)
    /// `D`: connected data for a link (from our callsign to the remote one).
    case connectedData(port: Int, from: String, to: String, pid: UInt8, data: [UInt8])
    /// `d`: end a link.
    case disconnect(port: Int, from: String, to: String)
    /// `Y`: frames not yet acknowledged on a link.
    case outstandingOnConnection(port: Int, from: String, to: String)
    /// A message that cannot be what its kind says (a `V` whose path runs past its data), and why.
    case malformed(kind: Character, reason: String)
    /// A kind Dire Wolf does not know (it logs it and goes on).
    case unknown(kind: UInt8)

    /// Reads what `frame` asks.
    public init(_ frame: AGWFrame) {
        let port = Int(frame.port)
        switch frame.kindCharacter {
        case "R": self = .version
        case "G": self = .portInformation
        case "g": self = .portCapabilities(port: port)
        case "H": self = .heardStations(port: port)
        case "k": self = .toggleRawFrames
        case "m": self = .toggleMonitorFrames
        case "P": self = .login
        case "X": self = .register(port: port, callsign: frame.callFrom)
        case "x": self = .unregister(port: port, callsign: frame.callFrom)
        case "y": self = .outstandingOnPort(port: port)
        case "M":
            self = .sendUnproto(port: port, pid: frame.pid, from: frame.callFrom, to: frame.callTo, via: [], info: frame.data)
        case "V":
            guard let count = frame.data.first else {
                self = .malformed(kind: "V", reason: "no digipeater count")
                return
            }
            guard count <= 8 else {
                self = .malformed(kind: "V", reason: "\(count) digipeaters (at most 8)")
                return
            }
            guard let via = Self.calls(frame.data.dropFirst(), count: Int(count)) else {
                self = .malformed(kind: "V", reason: "\(count) digipeaters do not fit in \(frame.data.count) data bytes")
                return
            }
            self = .sendUnproto(port: port, pid: frame.pid, from: frame.callFrom, to: frame.callTo, via: via,
                                info: Array(frame.data.dropFirst(1 + 10 * Int(count))))
        case "K":
            guard !frame.data.isEmpty else {
                self = .malformed(kind: "K", reason: "no data")
                return
            }
            self = .sendRaw(port: port, frame: Array(frame.data.dropFirst()))
        case "C", "v", "c":
            var request = AGWConnectRequest(port: port, from: frame.callFrom, to: frame.callTo)
            if frame.kind == UInt8(ascii: "c") { request.pid = frame.pid }
            if frame.kind == UInt8(ascii: "v") {
                // Dire Wolf takes 1...7 digipeaters and connects without a path otherwise.
                if let count = frame.data.first, (1...7).contains(count),
                   let via = Self.calls(frame.data.dropFirst(), count: Int(count)) {
                    request.via = via
                }
            }
            self = .connect(request)
        case "D":
            self = .connectedData(port: port, from: frame.callFrom, to: frame.callTo, pid: frame.pid, data: frame.data)
        case "d":
            self = .disconnect(port: port, from: frame.callFrom, to: frame.callTo)
        case "Y":
            self = .outstandingOnConnection(port: port, from: frame.callFrom, to: frame.callTo)
        default:
            self = .unknown(kind: frame.kind)
        }
    }

    /// `count` call fields of 10 bytes each, or nil when the bytes run out.
    private static func calls(_ bytes: ArraySlice<UInt8>, count: Int) -> [String]? {
        guard bytes.count >= 10 * count else { return nil }
        return (0..<count).map { i in
            let start = bytes.startIndex + 10 * i
            return AGWFrame.call(bytes[start..<(start + 10)])
        }
    }
}
