import ModemMessaging
import ModemWormhole

/// Whether an endpoint names a wormhole code (`wormhole:CODE`).
func isWormholeEndpoint(_ text: String?) -> Bool {
    text?.lowercased().hasPrefix("wormhole:") == true
}

/// Checks a `wormhole:CODE` endpoint of `--listen` (CODE may be empty: one is allocated and printed)
/// or `--to` (CODE required).
func validateWormholeEndpoint(_ text: String, dialer: Bool) throws {
    let code = String(text.dropFirst("wormhole:".count))
    if code.isEmpty {
        if dialer { throw UsageError("--to wormhole:CODE needs the code the listening side printed") }
        return
    }
    _ = try parseWormholeCode(code, option: dialer ? "--to" : "--listen")
}

/// The session of a `wormhole:CODE` endpoint: meets the peer through the rendezvous server, makes
/// the transit connection, and runs the session over it with the peer's key (sent sealed under the
/// code's PAKE key) trusted for this session and the prologue bound to that key; `trustAs` also
/// keeps the peer's key in the key store under that name. Prints `wormhole code: CODE` on standard
/// error when the code was allocated here.
func openWormholeSession(_ endpoint: String, dialer: Bool, options: SessionOptions, wormhole: WormholeOptions,
                         trustAs: String?) async throws -> NoiseSession {
    try validateWormholeEndpoint(endpoint, dialer: dialer)
    let text = String(endpoint.dropFirst("wormhole:".count))
    let code = text.isEmpty ? nil : try parseWormholeCode(text, option: dialer ? "--to" : "--listen")
    let relay = try wormhole.relay()
    let transit = try wormhole.transit()
    let identity: [UInt8]
    do { identity = try options.keys.identity().publicKey.rawRepresentation } catch {
        throw SessionFailure.invalidAuthorization("the keys folder cannot be used: \(error.description)")
    }
    let link: WormholeSessionLink
    do {
        link = try await WormholeSessionLink.connect(relay: relay, code: code, dialer: dialer, identity: identity,
                                                     service: options.service == .mailbox ? "mailbox" : "data", transit: transit) { c in
            if code == nil { printError("wormhole code: \(c.text)") }
        }
    } catch {
        if error.kind == .wrongCode { throw SessionFailure.invalidAuthorization(error.description) }
        throw SessionFailure.networkUnavailable(wormholeErrorText(error))
    }
    // The session names the peer by its key store entry when its key is trusted already, else by
    // --trust-as, else as the code's peer with its fingerprint; never by the name it claims. A
    // --trust-as name that another key holds is refused: the peer would be shown under it.
    if let trustAs, let holder = try? options.keys.trustedPeers().first(where: { KeyStore.sameName($0.name, trustAs) && $0.publicKey != link.peerKey }) {
        await link.transport.close()
        throw SessionFailure.invalidAuthorization("--trust-as \(trustAs): that name is already trusted for another key (fingerprint \(keyFingerprint(holder.publicKey))); choose another name")
    }
    var o = options
    o.sessionTrust = [TrustedPeer(name: trustAs ?? "wormhole-\(keyFingerprint(link.peerKey))", publicKey: link.peerKey)]
    o.prologueBinding = link.prologueBinding
    let session = try await NoiseSession.establish(over: link.transport, initiator: dialer, options: o)
    if let trustAs {
        do { try options.keys.trust(name: trustAs, publicKey: link.peerKey) } catch {
            printError("modem: --trust-as \(trustAs): \(error.description)")
        }
    }
    return session
}
