import ModemMessaging
import ModemTransport

/// A plaintext ``ModemMessaging/RecordSession`` straight over a transport: one record is one frame,
/// `kind u8 | body`. No handshake, no keys: the harness's stand-in for the Noise session when it
/// measures the link alone (`transfer-test --plain`), and the way to see what encryption costs.
public final class FrameRecordSession: RecordSession {
    /// Nobody authenticated: no key, not trusted.
    public let peer = PeerIdentity(publicKey: [], trustedName: nil, claimedName: "plain")
    /// The transport's largest frame less the kind byte.
    public let maximumRecordBody: Int
    private let transport: any MessageTransport

    /// Wraps a transport.
    public init(transport: any MessageTransport) {
        self.transport = transport
        maximumRecordBody = transport.maximumFrameSize - 1
    }

    /// Sends one record as one frame.
    public func send(kind: UInt8, body: [UInt8]) async throws(SessionSendError) {
        guard body.count <= maximumRecordBody else {
            throw .invalid("record body of \(body.count) bytes is larger than \(maximumRecordBody)")
        }
        var frame = [UInt8]()
        frame.reserveCapacity(body.count + 1)
        frame.append(kind)
        frame.append(contentsOf: body)
        do {
            try await transport.send(frame)
        } catch {
            throw .ended(.lostNet(error.description))
        }
    }

    /// The next record, or the end (the transport's end mapped to the mailbox API's reasons).
    public func receive() async -> SessionIncoming {
        while true {
            switch await transport.receive() {
            case .frame(let f):
                guard let kind = f.first else { continue }
                return .record(kind: kind, body: Array(f.dropFirst()))
            case .peerHeard:
                continue
            case .ended(let end):
                switch end {
                case .peerClosed: return .ended(.otherUserQuit)
                case .reset: return .ended(.otherUserLost("the peer's link was reset"))
                case .localClose: return .ended(.userQuit(nil))
                case .localFailure(let text), .malformed(let text): return .ended(.lostNet(text))
                }
            }
        }
    }

    /// Closes the transport.
    public func close() async {
        await transport.close()
    }
}
