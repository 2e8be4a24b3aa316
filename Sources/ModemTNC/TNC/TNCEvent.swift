import ModemCodecs
import ModemPipelines

/// What a ``TNC`` reports while it runs, for its log (the CLI prints each on standard error).
public enum TNCEvent: Sendable, CustomStringConvertible {
    /// A KISS client connected; `clients` are connected now.
    case clientConnected(KISSClientInfo, clients: Int)
    /// A connection was refused: too many clients.
    case clientRefused(peer: String, clients: Int)
    /// A client left or was dropped; what its KISS decoder counted; `clients` remain.
    case clientLeft(KISSClientInfo, reason: KISSDisconnectReason, statistics: KISSDecoderStatistics, clients: Int)
    /// A client sent bytes that are not KISS frames (reported once per client; later garbage is counted).
    case clientGarbage(KISSClientInfo, statistics: KISSDecoderStatistics)
    /// Decoding of the input started (with a file input, when the first client connected).
    case decodingStarted
    /// A frame was decoded from the audio and sent to `clients` clients.
    case received(ReceivedPacket, clients: Int)
    /// The input file ended; the receiver's counts. The TNC keeps serving (transmitting).
    case inputEnded(PacketStatistics)
    /// A client's frame was modulated to the output.
    case transmitted(monitorLine: String, from: KISSClientInfo)
    /// A client's data frame was not transmitted, and why.
    case rejected(from: KISSClientInfo, reason: String)
    /// A client set a transmit parameter (e.g. `TXDELAY 50 (500 ms)`).
    case parameterSet(from: KISSClientInfo, change: String)
    /// A client sent a command this TNC ignores (set hardware, return from KISS).
    case ignored(from: KISSClientInfo, command: KISSCommand)
    /// An AGW client left or was dropped; what its AGW decoder counted; `clients` AGW clients remain.
    case agwClientLeft(TCPClientInfo, reason: TCPDisconnectReason, statistics: AGWDecoderStatistics, clients: Int)
    /// An AGW client asked something worth a log line (registered a callsign, turned monitoring on or
    /// off, asked for a connected-mode link, sent a kind this TNC does not know), in words.
    case agwRequest(from: TCPClientInfo, what: String)

    public var description: String {
        switch self {
        case .clientConnected(let c, let n):
            return "\(c) connected (\(n) client\(n == 1 ? "" : "s"))"
        case .clientRefused(let peer, let n):
            return "connection from \(peer) refused: \(n) clients already connected"
        case .clientLeft(let c, let reason, let s, let n):
            var text = "\(c) left: \(reason); \(s.frames) KISS frame\(s.frames == 1 ? "" : "s") received"
            if s.garbageBytes > 0 || s.dropped > 0 { text += ", " + Self.garbage(s) }
            return text + " (\(n) client\(n == 1 ? "" : "s") left)"
        case .clientGarbage(let c, let s):
            return "\(c) sent bytes that are not KISS frames: ignored and counted (\(Self.garbage(s)) so far)"
        case .decodingStarted:
            return "decoding started"
        case .received(let p, let n):
            return "rx \(p.monitorLine)  -> \(n) client\(n == 1 ? "" : "s")"
        case .inputEnded(let s):
            return "input ended: \(s.decoded) frame\(s.decoded == 1 ? "" : "s") decoded (\(s.repaired) repaired), \(s.crcFailures) CRC failures; still serving until SIGINT/SIGTERM"
        case .transmitted(let line, let c):
            return "tx \(line)  (from \(c))"
        case .rejected(let c, let reason):
            return "frame from \(c) not transmitted: \(reason)"
        case .parameterSet(let c, let change):
            return "\(c) set \(change)"
        case .ignored(let c, let command):
            return "\(c) sent KISS command \(command) (ignored)"
        case .agwClientLeft(let c, let reason, let s, let n):
            var text = "\(c) left: \(reason); \(s.frames) AGW message\(s.frames == 1 ? "" : "s") received"
            if s.invalidPorts > 0 { text += ", \(s.invalidPorts) with an invalid port" }
            return text + " (\(n) AGW client\(n == 1 ? "" : "s") left)"
        case .agwRequest(let c, let what):
            return "\(c) \(what)"
        }
    }

    /// `12 garbage bytes, 1 bad escape, 0 unknown commands, 0 oversized frames`.
    static func garbage(_ s: KISSDecoderStatistics) -> String {
        "\(s.garbageBytes) garbage byte\(s.garbageBytes == 1 ? "" : "s"), \(s.badEscapes) bad escape\(s.badEscapes == 1 ? "" : "s"), "
            + "\(s.unknownCommands) unknown command\(s.unknownCommands == 1 ? "" : "s"), \(s.oversized) oversized frame\(s.oversized == 1 ? "" : "s")"
    }
}
