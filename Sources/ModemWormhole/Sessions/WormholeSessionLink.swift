import ModemCrypto
import ModemMessaging
import ModemTransport
import ModemRuntime

/// A messaging session's line made by a wormhole code (`wormhole:CODE` endpoints): both peers meet on
/// the rendezvous server under this project's application id, run the PAKE on the code, trade their
/// identity keys and transit hints in one sealed message each, and make a transit connection (direct
/// where they can, else through a relay). The session then runs over that connection with both
/// identity keys trusted for it alone (they came sealed under the PAKE's key, which only the code's
/// holders have) and the Noise prologue bound to that key, so no key needs trusting beforehand.
public struct WormholeSessionLink: Sendable {
    /// The application id of sessions by code (kept apart from file transfers on the same server).
    public static let appID = "swiftmodem.org/session-v1"

    /// The transport over the transit connection.
    public let transport: TCPTransport
    /// The peer's identity key, as it sent it.
    public let peerKey: [UInt8]
    /// Bytes for ``SessionOptions/prologueBinding`` (derived from the PAKE key; both sides alike).
    public let prologueBinding: [UInt8]
    /// How the transit connection was made (`direct tcp:...`, `relay tcp:...`).
    public let route: String

    /// Meets the peer and makes the line.
    /// - Parameters:
    ///   - relay: the rendezvous server.
    ///   - code: the code (nil: allocate one; `announce` gets it to print).
    ///   - dialer: whether this side is the session's initiator (`--to`); the other is `--listen`.
    ///   - identity: our identity public key.
    ///   - service: what the session is for (both sides must ask for the same).
    ///   - transit: relays, whether to listen, the hang guard.
    /// - Throws: ``WormholeError``: `.wrongCode` when the codes differ, `.peer` when the peer runs
    ///   another service or sends no usable key, `.transit` when no connection could be made.
    public static func connect(relay: WebSocketURL, code: WormholeCode?, dialer: Bool, identity: [UInt8], service: String,
                               transit: WormholeTransitOptions, announce: @Sendable (WormholeCode) -> Void = { _ in }) async throws(WormholeError) -> WormholeSessionLink {
        let w = try await Wormhole.open(relay: relay, appID: appID, code: code)
        announce(w.code)
        do throws(WormholeError) {
            try await w.establishKey(appVersions: ["session": .string(service)])
            guard let key = w.key else { throw WormholeError(.local, "no key") }
            let connector = try TransitConnector(role: dialer ? .sender : .receiver, transitKey: WormholeKeys.derive(key, purpose: appID + "/transit-key"),
                                                 relays: transit.relays, listen: transit.listen, clock: transit.clock)
            try await w.send(["session": ["service": .string(service), "identity": .string(Hex.encode(identity))],
                              "transit": connector.hints.message])
            let theirs = try await w.receiveJSON()
            guard let s = theirs["session"], let peerService = s["service"]?.string else {
                throw WormholeError(.peer, "the peer sent no session offer")
            }
            guard peerService == service else {
                throw WormholeError(.peer, "the peer wants a \(printableText(peerService)) session, this side a \(service) session")
            }
            guard let hex = s["identity"]?.string, let peerKey = Hex.decode(hex), peerKey.count == 32 else {
                throw WormholeError(.peer, "the peer's identity key is not 32 bytes of hex")
            }
            let connection = try await connector.connect(to: TransitHints(message: theirs["transit"] ?? [:]), timeout: transit.timeout)
            await w.close(mood: "happy")
            guard let fd = connection.stream.detach() else { throw WormholeError(.transit, "the transit connection closed at once") }
            return WormholeSessionLink(transport: TCPTransport.adopting(fd: fd, peerAddress: connection.stream.peer), peerKey: peerKey,
                                       prologueBinding: WormholeKeys.derive(key, purpose: appID + "/session-binding"),
                                       route: connection.route)
        } catch {
            await w.close(mood: error.kind == .wrongCode ? "scary" : "errory")
            throw error
        }
    }
}
