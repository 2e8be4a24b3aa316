import ModemCrypto
import Foundation
import ModemTransport

/// Which end of a session this is: the initiator dials and sends Noise's first message.
public enum SessionRole: Sendable, Equatable {
    /// Sends Noise message 1 (the dialer).
    case initiator
    /// Answers (the listener).
    case responder
}

/// Everything a ``SessionStateMachine`` needs, fixed at its start.
public struct SessionConfiguration: Sendable {
    /// Initiator or responder.
    public var role: SessionRole
    /// Our user name (a label, sent encrypted).
    public var userName: String
    /// What the session is for (in the prologue).
    public var service: SessionService
    /// The transport's kind (in the prologue; streams demand counters exactly +1).
    public var transportKind: TransportKind
    /// Keepalive interval, seconds.
    public var keepalive: Double
    /// Limits (bytes, seconds).
    public var limits: SessionLimits
    /// How long the handshake may take, seconds.
    public var handshakeTimeout: Double
    /// Our identity.
    public var staticKey: X25519PrivateKey
    /// This session's ephemeral key (random unless a test fixes it).
    public var ephemeralKey: X25519PrivateKey
    /// The trusted peers, read when the session starts.
    public var trusted: [TrustedPeer]
    /// The largest frame the transport carries.
    public var maximumFrameSize: Int
    /// Our software version (sent in the handshake).
    public var version: String
    /// The Noise AEAD (``SessionWire/cipher``; both ends must use the same, or the handshake fails).
    public var cipher: NoiseCipher = SessionWire.cipher
    /// Bytes appended to the Noise prologue, which both ends must have alike (a session met by a
    /// wormhole code binds itself to the code's PAKE key this way); empty by default.
    public var prologueBinding: [UInt8] = []

    /// Creates a configuration.
    public init(role: SessionRole, userName: String, service: SessionService, transportKind: TransportKind, keepalive: Double,
                limits: SessionLimits = .none, handshakeTimeout: Double = 30, staticKey: X25519PrivateKey,
                ephemeralKey: X25519PrivateKey = .init(), trusted: [TrustedPeer],
                maximumFrameSize: Int = SessionWire.maximumFrameLength, version: String = "SwiftModem") {
        self.role = role
        self.userName = userName
        self.service = service
        self.transportKind = transportKind
        self.keepalive = keepalive
        self.limits = limits
        self.handshakeTimeout = handshakeTimeout
        self.staticKey = staticKey
        self.ephemeralKey = ephemeralKey
        self.trusted = trusted
        self.maximumFrameSize = maximumFrameSize
        self.version = version
    }
}

/// What the driver of a ``SessionStateMachine`` must do or report. Frames to send are not actions:
/// the driver pulls them with ``SessionStateMachine/nextFrame(now:)`` when the line can take them,
/// so counters go out in order and a full line never queues unbounded control traffic.
public enum SessionAction: Sendable, Equatable {
    /// Both sides trust each other and accepted: records may flow.
    case established(PeerIdentity)
    /// The session could not be connected (nothing was delivered).
    case failed(SessionFailure)
    /// A record of a module's kind arrived.
    case deliver(kind: UInt8, body: [UInt8])
    /// The peer sent CLOSE: it will send no more.
    case peerClosing
    /// The connected session ended.
    case ended(SessionEnd)
    /// Send what ``SessionStateMachine/nextFrame(now:)`` still gives, then close the transport.
    case closeTransport
}

/// The session protocol as a pure value (docs/messaging-plan.md section 3): the Noise XX handshake
/// with TLV payloads, the trust gate (an untrusted key fails before any record moves), ACCEPT from
/// both sides, records with counters (replays dropped and counted, a record that fails
/// authentication ends the session), keepalive (PING after `keepalive` of our silence, lost after
/// twice that of the peer's), CLOSE/CLOSED half close, and limits. Inputs carry `now` in seconds
/// from any fixed origin; no I/O.
public struct SessionStateMachine: Sendable {
    private enum Phase: Equatable {
        case idle, handshaking, awaitingAccept, open, finished
    }

    /// The configuration.
    public let configuration: SessionConfiguration
    private var phase = Phase.idle
    private var handshake: HandshakeState
    private var sendCipher: CipherState?
    private var receiveCipher: CipherState?
    private var sendCounter: UInt64 = 0
    private var expectedCounter: UInt64 = 0
    private var outgoing: [[UInt8]] = []          // built frames (handshake, NOPE)
    private var control: [(UInt8, [UInt8])] = []  // session records to seal on the way out
    private var pongDue: UInt32?
    /// The plaintext of the record being sealed, kept from record to record (no allocation per record).
    private var sealScratch: [UInt8] = []
    private var peerTLV = SessionTLV()
    private var deadline: Double = 0
    private var lastHeard: Double = 0
    private var lastSent: Double = 0
    private var openedAt: Double = 0
    private var pingSequence: UInt32 = 0
    private var sentClose = false
    private var peerClosed = false
    private var closeDetail: String?
    private var bytesCounted = 0
    private var sentOurAccept = false

    /// The peer, once its static key was read and verified.
    public private(set) var peer: PeerIdentity?
    /// Records dropped because their counter was not new (replays).
    public private(set) var replaysDropped = 0
    /// Module records sealed for sending (0x10 and up).
    public private(set) var applicationRecordsSent = 0
    /// Module records delivered.
    public private(set) var applicationRecordsReceived = 0
    /// The effective keepalive: the smaller of ours and the peer's.
    public private(set) var keepalive: Double
    /// How the session ended or failed, once it did.
    public private(set) var outcome: SessionAction?

    /// A machine for one session.
    public init(configuration: SessionConfiguration) {
        self.configuration = configuration
        keepalive = configuration.keepalive
        handshake = HandshakeState(initiator: configuration.role == .initiator,
                                   prologue: SessionWire.prologue(service: configuration.service, kind: configuration.transportKind)
                                       + configuration.prologueBinding,
                                   staticKey: configuration.staticKey, ephemeralKey: configuration.ephemeralKey,
                                   cipher: configuration.cipher)
    }

    /// The largest body ``seal(kind:body:now:)`` accepts.
    public var maximumRecordBody: Int {
        min(SessionWire.maximumRecordBody, configuration.maximumFrameSize - SessionWire.recordOverhead)
    }

    /// Whether records may be sent (established and we have not closed).
    public var canSend: Bool { phase == .open && !sentClose }
    /// Whether the session is established (open, closing included).
    public var isOpen: Bool { phase == .open }
    /// Whether the session is over (failed or ended).
    public var isFinished: Bool { phase == .finished }
    /// Whether frames are waiting for ``nextFrame(now:)``.
    public var hasOutput: Bool { !outgoing.isEmpty || (sendCipher != nil && (!control.isEmpty || pongDue != nil)) }

    // MARK: inputs

    /// Starts the session: the initiator queues Noise message 1.
    public mutating func start(now: Double) -> [SessionAction] {
        guard phase == .idle else { return [] }
        phase = .handshaking
        deadline = now + configuration.handshakeTimeout
        lastHeard = now
        if configuration.role == .initiator {
            do {
                outgoing.append([SessionFrameType.handshake1.byte] + (try handshake.writeMessage(payload: [])))
            } catch {
                return fail(.networkUnavailable("the handshake could not start: \(error)"))
            }
        }
        return []
    }

    /// The transport heard the peer without a whole frame (keepalive counts it).
    public mutating func peerHeard(now: Double) {
        lastHeard = max(lastHeard, now)
    }

    /// A whole frame from the peer.
    public mutating func receive(frame: [UInt8], now: Double) -> [SessionAction] {
        guard phase != .finished, phase != .idle else { return [] }
        lastHeard = max(lastHeard, now)
        guard let first = frame.first, let type = SessionFrameType(byte: first) else {
            return protocolError("a frame of unknown type 0x\(String(frame.first ?? 0, radix: 16))")
        }
        switch type {
        case .nope:
            let reason = frame.count > 1 ? frame[1] : 2
            let text = String(decoding: frame.dropFirst(2), as: UTF8.self)
            guard phase != .open else { return protocolError("a refusal after the session opened") }
            return fail(Self.failure(reason: reason, text: text, fromPeer: true))
        case .handshake1, .handshake2, .handshake3:
            return handshakeMessage(type, Array(frame.dropFirst()), now: now)
        case .record:
            return record(frame, now: now)
        }
    }

    /// The transport ended.
    public mutating func transportEnded(_ end: TransportEnd, now: Double) -> [SessionAction] {
        switch phase {
        case .finished:
            return []
        case .idle, .handshaking, .awaitingAccept:
            let text: String = switch end {
            case .peerClosed: "the peer closed the connection during the handshake"
            case .reset: "the connection was reset during the handshake"
            case .localFailure(let t): t
            case .malformed(let t): "the peer broke the session protocol: \(t)"
            case .localClose: "the line was closed here during the handshake"
            }
            return fail(.networkUnavailable(text))
        case .open:
            switch end {
            case .peerClosed, .reset:
                if peerClosed { return finish(.otherUserQuit) }
                return finish(.otherUserLost(end == .reset ? "the peer's connection was reset without CLOSE"
                                                           : "the peer's connection ended without CLOSE"))
            case .localFailure(let t):
                return finish(.lostNet(t))
            case .malformed(let t):
                return finish(.lostNet("the peer broke the session protocol: \(t)"))
            case .localClose:
                return finish(.lostNet("the line was closed here"))
            }
        }
    }

    /// Time passed: handshake timeout, keepalive (PING, loss), time limit.
    public mutating func tick(now: Double) -> [SessionAction] {
        switch phase {
        case .handshaking, .awaitingAccept:
            if now >= deadline {
                return fail(.networkUnavailable("no handshake within \(Self.seconds(configuration.handshakeTimeout)) s"))
            }
            return []
        case .open:
            if now - lastHeard >= 2 * keepalive {
                return finish(.lostNet("nothing heard from the peer for \(Self.seconds(now - lastHeard)) s (keepalive \(Self.seconds(keepalive)) s)"))
            }
            if let limit = configuration.limits.seconds, now - openedAt >= limit, !sentClose {
                startClose(reason: 3, detail: "the session's time limit (\(Self.seconds(limit)) s) was reached")
            }
            // On a link (the channel protocol's duplex messages) the transport keeps the line alive
            // itself: heartbeat frames when idle, acknowledgements while the peer sends, each heard
            // as `peerHeard`. A PING there would be a message each way for nothing (about 4 % of a
            // 1200 baud transfer), so only stream sessions send them.
            if configuration.transportKind == .stream, now - lastSent >= keepalive && control.isEmpty && pongDue == nil {
                pingSequence &+= 1
                control.append((SessionRecordKind.ping, .bigEndian(pingSequence)))
            }
            return []
        case .idle, .finished:
            return []
        }
    }

    /// Our side closes: before the session opened this cancels (`FAIL_USER_CANCELED`); when the peer
    /// closed first it answers CLOSED and ends (`END_OTHER_USER_QUIT`); otherwise it sends CLOSE
    /// and waits for the peer's CLOSED or CLOSE (`END_USER_QUIT`).
    public mutating func close(now: Double) -> [SessionAction] {
        switch phase {
        case .idle, .handshaking, .awaitingAccept:
            if sendCipher != nil { control.append((SessionRecordKind.reject, [SessionFailure.userCanceled.code])) }
            else if phase == .handshaking { outgoing.append(SessionWire.nope(SessionFailure.userCanceled.code, "cancelled")) }
            return fail(.userCanceled)
        case .open:
            if peerClosed {
                control.append((SessionRecordKind.closed, []))
                return finish(.otherUserQuit)
            }
            if !sentClose { startClose(reason: 1, detail: nil) }
            return []
        case .finished:
            return []
        }
    }

    // MARK: output

    /// The next frame to send, or nil. Records are sealed here, so counters leave in order.
    public mutating func nextFrame(now: Double) -> [UInt8]? {
        if !outgoing.isEmpty {
            lastSent = now
            return outgoing.removeFirst()
        }
        guard sendCipher != nil else { return nil }
        if let sequence = pongDue {
            pongDue = nil
            lastSent = now
            return try? sealRecord(SessionRecordKind.pong, .bigEndian(sequence))
        }
        if !control.isEmpty {
            let (kind, body) = control.removeFirst()
            lastSent = now
            return try? sealRecord(kind, body)
        }
        return nil
    }

    /// Seals a module's record for sending (the driver calls it when the line can take the frame).
    /// - Throws: ``SessionSendError``: not open, closing, a session kind, or too large.
    public mutating func seal(kind: UInt8, body: [UInt8], now: Double) throws(SessionSendError) -> [UInt8] {
        var frame = [UInt8]()
        try seal(kind: kind, body: body, now: now, into: &frame)
        return frame
    }

    /// ``seal(kind:body:now:)`` into `frame`, whose storage is reused (its contents are replaced): a
    /// driver that hands back the previous frame once the transport is done with it seals without
    /// allocating per record.
    public mutating func seal(kind: UInt8, body: [UInt8], now: Double, into frame: inout [UInt8]) throws(SessionSendError) {
        guard kind >= 0x10 else { throw .invalid("record kind 0x\(String(kind, radix: 16)) belongs to the session itself (modules use 0x10 and up)") }
        guard body.count <= maximumRecordBody else {
            throw .invalid("a record body of \(body.count) bytes (at most \(maximumRecordBody))")
        }
        switch phase {
        case .open:
            guard !sentClose else { throw .closing }
        case .finished:
            if case .ended(let end)? = outcome { throw .ended(end) }
            throw .ended(.lostNet("the session failed"))
        default:
            throw .invalid("the session is not established yet")
        }
        do {
            try sealRecord(kind, body, into: &frame)
        } catch {
            throw .ended(.lostNet("\(error)"))
        }
        lastSent = now
        applicationRecordsSent += 1
        countBytes(body.count)
    }

    // MARK: internals

    private mutating func sealRecord(_ kind: UInt8, _ body: [UInt8]) throws(NoiseError) -> [UInt8] {
        var frame = [UInt8]()
        try sealRecord(kind, body, into: &frame)
        return frame
    }

    private mutating func sealRecord(_ kind: UInt8, _ body: [UInt8], into frame: inout [UInt8]) throws(NoiseError) {
        guard let cipher = sendCipher else { throw NoiseError("no keys yet") }
        guard sendCounter < UInt64.max - 1 else { throw NoiseError("the record counter is used up") }
        let counter = sendCounter
        sendCounter += 1
        var header = [SessionFrameType.record.byte]
        header += [UInt8].bigEndian(counter)
        try cipher.sealFrame(counter: counter, header: header, kind: kind, body: body, into: &frame, scratch: &sealScratch)
    }

    private mutating func handshakeMessage(_ type: SessionFrameType, _ body: [UInt8], now: Double) -> [SessionAction] {
        let expected: SessionFrameType = switch handshake.messageIndex {
        case 0: .handshake1
        case 1: .handshake2
        default: .handshake3
        }
        guard phase == .handshaking, type == expected, !handshake.isMyTurn else {
            return protocolError("handshake message \(type.rawValue) out of turn")
        }
        let payload: [UInt8]
        do {
            payload = try handshake.readMessage(body)
        } catch {
            outgoing.append(SessionWire.nope(SessionFailure.networkUnavailable("").code, "handshake failed"))
            return fail(.networkUnavailable("the handshake failed: \(error.description) (does the peer speak another service or version?)"))
        }
        if type != .handshake1 {
            guard let tlv = try? SessionTLV.decode(payload) else {
                outgoing.append(SessionWire.nope(2, "bad handshake payload"))
                return fail(.networkUnavailable("the peer's handshake payload is malformed"))
            }
            peerTLV = tlv
            if let ms = tlv.value(SessionTLV.Field.keepalive).flatMap({ $0.readBigEndian(UInt32.self) }), ms > 0 {
                keepalive = min(keepalive, max(0.1, Double(ms) / 1000))
            }
        }
        switch type {
        case .handshake1:
            do {
                outgoing.append([SessionFrameType.handshake2.byte] + (try handshake.writeMessage(payload: ourTLV().encoded)))
            } catch {
                return fail(.networkUnavailable("the handshake failed: \(error.description)"))
            }
            return []
        case .handshake2:
            if let refusal = trustRefusal() {
                outgoing.append(SessionWire.nope(refusal.code, "your key is not trusted here"))
                return fail(refusal)
            }
            do {
                var tlv = ourTLV()
                tlv.add(SessionTLV.Field.verdict, [0])
                outgoing.append([SessionFrameType.handshake3.byte] + (try handshake.writeMessage(payload: tlv.encoded)))
                let (send, receive) = try handshake.split()
                sendCipher = send
                receiveCipher = receive
            } catch {
                return fail(.networkUnavailable("the handshake failed: \(error.description)"))
            }
            control.append((SessionRecordKind.accept, acceptBody()))
            sentOurAccept = true
            phase = .awaitingAccept
            return []
        case .handshake3:
            do {
                let (send, receive) = try handshake.split()
                sendCipher = send
                receiveCipher = receive
            } catch {
                return fail(.networkUnavailable("the handshake failed: \(error.description)"))
            }
            if let refusal = trustRefusal() {
                control.append((SessionRecordKind.reject, [refusal.code] + Array("your key is not trusted here".utf8)))
                return fail(refusal)
            }
            control.append((SessionRecordKind.accept, acceptBody()))
            sentOurAccept = true
            phase = .awaitingAccept
            return []
        default:
            return []
        }
    }

    /// The failure when the peer's static key is not trusted (or its trust expired), else nil.
    private mutating func trustRefusal() -> SessionFailure? {
        guard let key = handshake.remoteStatic else { return .networkUnavailable("no peer key in the handshake") }
        let name = peerTLV.value(SessionTLV.Field.userName).map(Self.cleanName) ?? ""
        let entry = configuration.trusted.first(where: { $0.publicKey == key })
        // Named by the trust entry of the key that authenticated; the announced name is only a claim.
        peer = PeerIdentity(publicKey: key, trustedName: entry?.name, claimedName: name)
        let fingerprint = keyFingerprint(key)
        guard let entry else {
            return .invalidAuthorization("the peer's key \(KeyText.encode(key)) (fingerprint \(fingerprint)) is not trusted here; trust it with 'modem keys trust NAME KEY'")
        }
        if let expires = entry.expires, entry.isExpired(at: Self.wallClock()) {
            return .expiredKey("the trust in '\(entry.name)' (fingerprint \(fingerprint)) expired at \(RFC3339.format(expires))")
        }
        return nil
    }

    private static func wallClock() -> Date { Date() }

    private func ourTLV() -> SessionTLV {
        var tlv = SessionTLV()
        tlv.add(SessionTLV.Field.userName, Array(NameCleaner.utf8Prefix(configuration.userName, maximumBytes: 64).utf8))
        tlv.add(SessionTLV.Field.keepalive, .bigEndian(Self.clampedUInt32(configuration.keepalive * 1000)))
        let bytes = UInt64(clamping: configuration.limits.bytes ?? 0)
        let seconds = Self.clampedUInt32(configuration.limits.seconds ?? 0)
        tlv.add(SessionTLV.Field.limits, .bigEndian(bytes) + .bigEndian(seconds))
        tlv.add(SessionTLV.Field.version, Array(NameCleaner.utf8Prefix(configuration.version, maximumBytes: 64).utf8))
        return tlv
    }

    private func acceptBody() -> [UInt8] {
        var tlv = SessionTLV()
        tlv.add(SessionTLV.Field.userName, Array(NameCleaner.utf8Prefix(configuration.userName, maximumBytes: 64).utf8))
        return tlv.encoded
    }

    private mutating func record(_ frame: [UInt8], now: Double) -> [SessionAction] {
        guard let cipher = receiveCipher, phase == .awaitingAccept || phase == .open else {
            return protocolError("a record before the handshake finished")
        }
        guard frame.count >= SessionWire.recordHeaderLength + 16 + 1 else { return protocolError("a record of \(frame.count) bytes is too short") }
        let counter = frame.readBigEndian(UInt64.self, at: 1)!
        if counter < expectedCounter {
            replaysDropped += 1
            return []
        }
        if counter > expectedCounter && configuration.transportKind == .stream {
            return protocolError("record \(expectedCounter) is missing (got \(counter)) on a stream")
        }
        let kind: UInt8
        let content: [UInt8]
        do {
            (kind, content) = try cipher.openFrame(counter: counter, frame: frame, headerLength: SessionWire.recordHeaderLength)
        } catch {
            return protocolError("a record failed authentication (changed in transit)")
        }
        expectedCounter = counter + 1
        if phase == .awaitingAccept {
            switch kind {
            case SessionRecordKind.accept:
                phase = .open
                openedAt = now
                lastSent = now
                lastHeard = now
                if let tlv = try? SessionTLV.decode(content), let name = tlv.value(SessionTLV.Field.userName), peer?.claimedName.isEmpty ?? false {
                    peer?.claimedName = Self.cleanName(name)
                }
                return [.established(peer ?? PeerIdentity(publicKey: handshake.remoteStatic ?? [], trustedName: nil, claimedName: ""))]
            case SessionRecordKind.reject:
                let reason = content.first ?? 2
                return fail(Self.failure(reason: reason, text: String(decoding: content.dropFirst(), as: UTF8.self), fromPeer: true))
            default:
                return fail(.networkUnavailable("the peer sent a record before accepting"))
            }
        }
        switch kind {
        case SessionRecordKind.ping:
            pongDue = content.readBigEndian(UInt32.self) ?? 0
            return []
        case SessionRecordKind.pong, SessionRecordKind.accept:
            return []
        case SessionRecordKind.close:
            if sentClose { return finish(.userQuit(closeDetail)) }
            peerClosed = true
            return [.peerClosing]
        case SessionRecordKind.closed:
            return finish(sentClose ? .userQuit(closeDetail) : .otherUserQuit)
        case SessionRecordKind.reject:
            return finish(.lostNet("the peer refused the session after it opened"))
        case 0x07...0x0F:
            return []  // reserved session kinds: ignored, for later versions
        default:
            applicationRecordsReceived += 1
            let actions: [SessionAction] = [.deliver(kind: kind, body: content)]
            countBytes(content.count)
            return actions
        }
    }

    private mutating func countBytes(_ n: Int) {
        bytesCounted += n
        if let limit = configuration.limits.bytes, bytesCounted >= limit, !sentClose, phase == .open, !peerClosed {
            startClose(reason: 2, detail: "the session's byte limit (\(limit) bytes) was reached")
        }
    }

    private mutating func startClose(reason: UInt8, detail: String?) {
        sentClose = true
        closeDetail = detail
        control.append((SessionRecordKind.close, [reason]))
    }

    private mutating func protocolError(_ text: String) -> [SessionAction] {
        if phase == .open { return finish(.lostNet(text)) }
        return fail(.networkUnavailable(text))
    }

    private mutating func fail(_ failure: SessionFailure) -> [SessionAction] {
        guard phase != .finished else { return [] }
        phase = .finished
        outcome = .failed(failure)
        return [.failed(failure), .closeTransport]
    }

    private mutating func finish(_ end: SessionEnd) -> [SessionAction] {
        guard phase != .finished else { return [] }
        phase = .finished
        outcome = .ended(end)
        return [.ended(end), .closeTransport]
    }

    static func failure(reason: UInt8, text: String, fromPeer: Bool) -> SessionFailure {
        let clean = TerminalText.safe(text, maximumScalars: 200)
        let said = clean.isEmpty ? "" : " (\(clean))"
        switch reason {
        case 1: return .networkUnavailable("the peer cancelled\(said)")
        case 3: return .invalidAuthorization("the peer does not trust this installation's key\(said)")
        case 4: return .exceededRateLimit
        case 5: return .expiredKey("the peer's trust in this installation's key has expired\(said)")
        case 6: return .badContact("the peer refused the contact card\(said)")
        default: return .networkUnavailable("the peer refused the session\(said)")
        }
    }

    static func cleanName(_ bytes: [UInt8]) -> String {
        var name = String(String(decoding: bytes, as: UTF8.self).unicodeScalars.filter { !TerminalText.isUnsafe($0) && $0 != "\u{FFFD}" }
            .map(Character.init))
        while name.utf8.count > 64 { name.removeLast() }
        return name
    }

    static func seconds(_ value: Double) -> String {
        let tenths = (value * 10).rounded() / 10
        return tenths == tenths.rounded() && abs(tenths) < 1e15 ? String(Int(tenths)) : String(tenths)
    }

    /// `value` rounded into 0...UInt32.max (a field of the TLV), whatever the Double (never traps).
    static func clampedUInt32(_ value: Double) -> UInt32 {
        guard !value.isNaN else { return 0 }
        return UInt32(min(max(value.rounded(), 0), Double(UInt32.max)))
    }
}
