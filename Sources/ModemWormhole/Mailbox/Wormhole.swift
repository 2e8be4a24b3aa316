import ModemCrypto
import Synchronization
import ModemRuntime

/// A wormhole code, `NAMEPLATE-WORD-WORD...`: the nameplate (digits) the rendezvous server knows,
/// and the whole text, which is the PAKE's password and never leaves this process otherwise.
public struct WormholeCode: Sendable, Equatable, CustomStringConvertible {
    /// The whole code.
    public let text: String
    /// Its nameplate (the digits before the first `-`).
    public let nameplate: String

    /// Parses a code.
    /// - Throws: ``WormholeError`` (`.local`) naming what is wrong (never echoing the words).
    public init(_ text: String) throws(WormholeError) {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count >= 2, isNameplate(String(parts[0])) else {
            throw WormholeError(.local, "a wormhole code is NUMBER-WORD-WORD (digits, then words joined by '-')")
        }
        guard parts.dropFirst().allSatisfy({ !$0.isEmpty }), text.utf8.count <= 256,
              text.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value != 0x7F }) else {
            throw WormholeError(.local, "a wormhole code's words are non-empty, without spaces or control characters, 256 bytes at most")
        }
        self.text = text
        nameplate = String(parts[0])
    }

    /// A fresh code for `nameplate`: `words` random words from the PGP list (odd, even, ...).
    public static func random(nameplate: String, words: Int = 2) -> WormholeCode {
        let bytes = secureRandomBytes(words)
        let chosen = bytes.enumerated().map { i, b in i % 2 == 0 ? PGPWordList.odd[Int(b)] : PGPWordList.even[Int(b)] }
        // Always valid: digits from the server (checked), words from the list.
        return try! WormholeCode(([nameplate] + chosen).joined(separator: "-"))
    }

    /// The code itself is a secret: printing a code value shows only its nameplate.
    public var description: String { "\(nameplate)-…" }
}

/// One side of a magic-wormhole: the rendezvous server's mailbox, the PAKE on the code, the version
/// exchange, then numbered application messages, each sealed with the key of its side and phase.
///
/// ```
/// let w = try await Wormhole.open(relay: url, appID: "lothar.com/wormhole/text-or-file-xfer", code: nil)
/// print(w.code)                      // allocated: 7-crossover-clockwork
/// try await w.establishKey(versions: [:])
/// try await w.send(JSON...)          // phase 0, 1, ...
/// let m = try await w.receive()      // the peer's phases in order
/// await w.close(mood: "happy")
/// ```
public final class Wormhole: Sendable {
    /// The application id (both sides must use the same; it is also the PAKE's identity).
    public let appID: String
    /// Our side: 10 random hex digits.
    public let side: String
    /// The code (allocated or given).
    public let code: WormholeCode
    private let client: RendezvousClient
    private let mailbox: String
    private struct State {
        var key: [UInt8]?
        var peerSide: String?
        var peerVersions: JSONValue?
        var nextPhase = 0
        var nextPeerPhase = 0
        var held = HeldPhases()
        var released = false
        var closed = false
    }
    private let state = Mutex(State())

    private init(appID: String, side: String, code: WormholeCode, client: RendezvousClient, mailbox: String) {
        self.appID = appID
        self.side = side
        self.code = code
        self.client = client
        self.mailbox = mailbox
    }

    /// Connects to the rendezvous server, binds, allocates a nameplate (when `code` is nil: a code
    /// with two random words is made for it) or claims the given code's, and opens its mailbox.
    /// - Throws: ``WormholeError`` (`.network`, `.server`: e.g. the nameplate is `crowded`).
    public static func open(relay: WebSocketURL, appID: String, code: WormholeCode?, timeout: Double = 15) async throws(WormholeError) -> Wormhole {
        let client = try await RendezvousClient.connect(relay, timeout: timeout)
        do throws(WormholeError) {
            let side = Hex.encode(secureRandomBytes(5))
            try await client.bind(appID: appID, side: side)
            var chosen: WormholeCode
            if let code { chosen = code } else { chosen = WormholeCode.random(nameplate: try await client.allocate()) }
            let mailbox = try await client.claim(chosen.nameplate)
            try await client.open(mailbox)
            return Wormhole(appID: appID, side: side, code: chosen, client: client, mailbox: mailbox)
        } catch {
            await client.close()
            throw error
        }
    }

    /// The rendezvous server's message of the day, if any.
    public var motd: String? { client.motd }

    /// The next message from the peer (the first other side heard becomes the peer; our own messages,
    /// relayed back, and a third side's are skipped).
    private func nextFromPeer() async throws(WormholeError) -> MailboxMessage {
        while true {
            let m = try await client.nextMessage()
            if m.side == side { continue }
            let accepted = state.withLock { s -> Bool in
                if s.peerSide == nil { s.peerSide = m.side }
                return s.peerSide == m.side
            }
            if accepted { return m }
        }
    }

    /// Runs the PAKE on the code, sends our `version` message (`{"app_versions": appVersions}`) and
    /// opens the peer's, then releases the nameplate (the code can no longer be used).
    /// - Returns: the peer's `app_versions`.
    /// - Throws: ``WormholeError``: `.wrongCode` when the peer's version does not open with our key
    ///   (the codes differ; the mailbox is closed `scary`), `.peer` for a bad PAKE message.
    @discardableResult
    public func establishKey(appVersions: JSONValue = [:], entropy: [UInt8] = secureRandomBytes(64)) async throws(WormholeError) -> JSONValue {
        let pake: SPAKE2Symmetric
        do {
            pake = try SPAKE2Symmetric(password: Array(code.text.utf8), identity: Array(appID.utf8), entropy: entropy)
        } catch {
            throw WormholeError(.local, error.description)
        }
        try await client.add(phase: "pake", body: JSONValue.object(["pake_v1": .string(Hex.encode(pake.outboundMessage))]).bytes)
        var key: [UInt8]?
        var peerVersion: [UInt8]?
        while key == nil || peerVersion == nil {
            let m = try await nextFromPeer()
            switch m.phase {
            case "pake" where key == nil:
                guard let hex = JSONValue.parse(m.body)?["pake_v1"]?.string, let message = Hex.decode(hex) else {
                    await close(mood: "errory")
                    throw WormholeError(.peer, "the peer's PAKE message is not {\"pake_v1\": HEX}")
                }
                do {
                    key = try pake.finish(message)
                } catch {
                    await close(mood: "scary")
                    throw WormholeError(.peer, "the peer's PAKE message is unusable: \(error.description)")
                }
                let versions: JSONValue = ["app_versions": appVersions]
                try await client.add(phase: "version", body: WormholeKeys.seal(versions.bytes, key: WormholeKeys.phaseKey(key!, side: side, phase: "version")))
            case "version" where peerVersion == nil:
                peerVersion = m.body
            default:
                // Numbered phases may come before we finished: keep them for receive().
                if let n = Int(m.phase), n >= 0 {
                    let refused = state.withLock { s -> WormholeError? in
                        do throws(WormholeError) { try s.held.hold(phase: n, m.body) } catch { return error }
                        return nil
                    }
                    if let refused {
                        await close(mood: "errory")
                        throw refused
                    }
                }
            }
        }
        let peerSide = state.withLock { $0.peerSide } ?? ""
        guard let plain = try? WormholeKeys.open(peerVersion!, key: WormholeKeys.phaseKey(key!, side: peerSide, phase: "version")) else {
            await close(mood: "scary")
            throw WormholeError(.wrongCode, "wrong code: the peer's messages do not open with this code (check the code and try again)")
        }
        let versions = JSONValue.parse(plain)
        state.withLock { s in
            s.key = key
            s.peerVersions = versions
        }
        try? await client.release(code.nameplate)
        state.withLock { $0.released = true }
        return versions?["app_versions"] ?? [:]
    }

    /// The key both sides share once ``establishKey(appVersions:entropy:)`` returned.
    public var key: [UInt8]? { state.withLock { $0.key } }

    /// A key derived from the shared one for `purpose` (magic-wormhole's `derive_key`).
    public func deriveKey(purpose: String, length: Int = 32) -> [UInt8]? {
        key.map { WormholeKeys.derive($0, purpose: purpose, length: length) }
    }

    /// Sends the next numbered application message (phase `0`, `1`, ...), sealed.
    public func send(_ plaintext: [UInt8]) async throws(WormholeError) {
        let (key, phase) = state.withLock { s in
            defer { s.nextPhase += 1 }
            return (s.key, s.nextPhase)
        }
        guard let key else { throw WormholeError(.local, "no key yet: establishKey() first") }
        try await client.add(phase: String(phase), body: WormholeKeys.seal(plaintext, key: WormholeKeys.phaseKey(key, side: side, phase: String(phase))))
    }

    /// Sends a JSON application message.
    public func send(_ message: JSONValue) async throws(WormholeError) { try await send(message.bytes) }

    /// The peer's next application message, in phase order, opened.
    /// - Throws: ``WormholeError`` (`.peer` when one does not open: changed on the way).
    public func receive() async throws(WormholeError) -> [UInt8] {
        guard let key = self.key else { throw WormholeError(.local, "no key yet: establishKey() first") }
        while true {
            let (ready, n, peerSide): ([UInt8]?, Int, String) = state.withLock { s in
                (s.held.take(phase: s.nextPeerPhase), s.nextPeerPhase, s.peerSide ?? "")
            }
            if let ready {
                guard let plain = try? WormholeKeys.open(ready, key: WormholeKeys.phaseKey(key, side: peerSide, phase: String(n))) else {
                    throw WormholeError(.peer, "the peer's message \(n) does not open (changed on the way)")
                }
                state.withLock { $0.nextPeerPhase += 1 }
                return plain
            }
            let m = try await nextFromPeer()
            if let p = Int(m.phase), p >= n {
                let refused = state.withLock { s -> WormholeError? in
                    do throws(WormholeError) { try s.held.hold(phase: p, m.body) } catch { return error }
                    return nil
                }
                if let refused { throw refused }
            }
        }
    }

    /// The peer's next application message as JSON.
    public func receiveJSON() async throws(WormholeError) -> JSONValue {
        let bytes = try await receive()
        guard let v = JSONValue.parse(bytes), v.object != nil else { throw WormholeError(.peer, "the peer's message is not a JSON object") }
        return v
    }

    /// Releases the nameplate (if still held), closes the mailbox with `mood`, and the connection.
    public func close(mood: String) async {
        let (release, close) = state.withLock { s in
            defer { s.released = true; s.closed = true }
            return (!s.released, !s.closed)
        }
        guard close else { return }
        if release { try? await client.release(code.nameplate) }
        try? await client.close(mailbox: mailbox, mood: mood)
        await client.close()
    }
}

/// The partner's numbered messages that came before they were due, held until ``Wormhole/receive()``
/// reaches them: at most ``maximumCount`` of them and ``maximumBytes`` together. A partner that sends
/// more ahead is refused with a `.peer` error (nothing is dropped silently); a phase sent again
/// replaces the one held.
struct HeldPhases: Sendable {
    /// Messages held at most.
    static let maximumCount = 1000
    /// Bytes held at most (8 MiB; an honest partner sends a few small messages ahead at most).
    static let maximumBytes = 8 << 20
    private var held: [Int: [UInt8]] = [:]
    /// Bytes held now.
    private(set) var bytes = 0
    /// Messages held now.
    var count: Int { held.count }

    /// Holds the body of phase `phase`.
    mutating func hold(phase: Int, _ body: [UInt8]) throws(WormholeError) {
        let replaced = held[phase]?.count ?? 0
        guard held[phase] != nil || held.count < Self.maximumCount else {
            throw WormholeError(.peer, "the peer sent over \(Self.maximumCount) messages ahead")
        }
        guard body.count <= Self.maximumBytes - (bytes - replaced) else {
            throw WormholeError(.peer, "the peer sent over \(Self.maximumBytes) bytes of messages ahead")
        }
        held[phase] = body
        bytes += body.count - replaced
    }

    /// Takes the body of phase `phase`, if held.
    mutating func take(phase: Int) -> [UInt8]? {
        guard let body = held.removeValue(forKey: phase) else { return nil }
        bytes -= body.count
        return body
    }
}
